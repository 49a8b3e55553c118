"""The operator's configuration file: `$XDG_CONFIG_HOME/gpuq/config.toml` (or `--config FILE`).

Every key is optional; without a file gpuq runs the embedded demo cluster with the default policy.

```toml
backend = "demo"          # backend used when --backend is not given and no cluster is selected
cluster = "prod"          # cluster used when --cluster is not given (a [clusters.*] name)
output = "table"          # default for -o/--output: table | wide | json | csv
color = true              # false is the same as always passing --no-color
policy_file = "policy.toml"   # policy for every cluster (relative to this file) ...
[policy]                  # ... or the policy inline, same keys as a policy file
preemption.delta = 10

[backends.slurm]          # options for a backend wherever it is used
urgent_qos = "urgent"

[console]                 # the live console (`gpuq tui`)
refresh = 2               # seconds between refreshes, 1 to 3600
theme = "dark"            # dark | light | high-contrast | colorblind, or a user theme's name
read_only = false         # true: every action is disabled (same as `gpuq tui --read-only`)
[console.keys]            # rebind console actions: action id = "key" or "key1,key2"
bump = "B"

[clusters.prod]           # one table per cluster; --cluster prod selects it
backend = "slurm"         # required unless the top-level `backend` applies
policy_file = "/etc/gpuq/prod-policy.toml"   # or [clusters.prod.policy]
# any other key is passed to the backend (e.g. urgent_qos, exempt_qos for slurm;
# seed, speed for demo) and rejected if the backend does not take it. The table name is
# passed as the backend's `cluster` (Slurm: `-M NAME`) unless the table sets `cluster = "…"`.
```

Policy resolution: `--policy FILE`, else the cluster's policy, else the top-level policy, else
`gpuq.policy.config.DEFAULT_POLICY`. Errors name the file, the line and the key
(`config.toml:7: clusters.prod.backend: expected a string`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import msgspec

from gpuq import locations
from gpuq.errors import BadInput
from gpuq.policy.config import DEFAULT_POLICY, Policy, PolicyKeyError, policy_from_mapping

__all__ = [
    "OUTPUT_FORMATS",
    "REFRESH_DEFAULT_S",
    "REFRESH_MAX_S",
    "REFRESH_MIN_S",
    "ClusterConfig",
    "Config",
    "ConsoleConfig",
    "PolicySource",
    "TomlDocument",
    "load_config",
    "load_policy_file",
    "load_toml",
]

#: `wide` is a table with every column (kubectl's `-o wide`); the others are documented in README.
OUTPUT_FORMATS = ("table", "wide", "json", "csv")
DEFAULT_BACKEND = "demo"

_TOP_KEYS = {"backend", "cluster", "output", "color", "policy_file", "policy", "console", "backends", "clusters"}
_CONSOLE_KEYS = {"refresh", "theme", "read_only", "keys"}
#: `[console] refresh` bounds (seconds): a floor of 1 s keeps a console from hammering a scheduler
REFRESH_MIN_S, REFRESH_MAX_S, REFRESH_DEFAULT_S = 1.0, 3600.0, 2.0
_CLUSTER_RESERVED = {"backend", "policy_file", "policy"}


class TomlDocument(msgspec.Struct, frozen=True):
    """A parsed TOML file and its text, kept to point errors at lines."""

    path: str
    text: str
    data: dict[str, Any]

    def line_of(self, dotted: str) -> int | None:
        return find_key_line(self.text, dotted)

    def where(self, dotted: str) -> str:
        """`file:line` for a dotted key (just `file` when the line cannot be found)."""
        line = self.line_of(dotted)
        return f"{self.path}:{line}" if line else self.path

    def error(self, dotted: str, problem: str) -> BadInput:
        return BadInput(f"{self.where(dotted)}: {dotted}: {problem}")


class PolicySource(msgspec.Struct, frozen=True):
    """A resolved policy and where it came from (shown by `gpuq job`, recorded nowhere else)."""

    policy: Policy
    source: str


class ClusterConfig(msgspec.Struct, frozen=True):
    """One `[clusters.NAME]` table: its backend, backend options and optional policy."""

    name: str
    backend: str | None
    options: Mapping[str, Any]
    policy: PolicySource | None = None


class ConsoleConfig(msgspec.Struct, frozen=True):
    """The `[console]` table: what `gpuq tui` starts with (its flags override these)."""

    #: seconds between refreshes (`refresh`), REFRESH_MIN_S to REFRESH_MAX_S
    refresh_s: float = REFRESH_DEFAULT_S
    #: a theme name (gpuq.tui.themes); the console reports one it does not know
    theme: str = "dark"
    read_only: bool = False
    #: `[console.keys]`: action id -> key spec ("B", "1,f1"); the console checks both
    keys: Mapping[str, str] = msgspec.field(default_factory=lambda: MappingProxyType({}))


class Config(msgspec.Struct, frozen=True):
    """The whole configuration with documented defaults filled in."""

    path: str | None = None
    backend: str = DEFAULT_BACKEND
    cluster: str | None = None
    output: str = "table"
    color: bool = True
    policy: PolicySource | None = None
    backend_options: Mapping[str, Mapping[str, Any]] = msgspec.field(default_factory=lambda: MappingProxyType({}))
    clusters: Mapping[str, ClusterConfig] = msgspec.field(default_factory=lambda: MappingProxyType({}))
    console: ConsoleConfig = msgspec.field(default_factory=ConsoleConfig)
    document: TomlDocument | None = None

    def where(self, dotted: str) -> str:
        """`file:line` of a key, for errors raised after loading (e.g. a bad backend option)."""
        return self.document.where(dotted) if self.document else "<defaults>"

    def error(self, dotted: str, problem: str) -> BadInput:
        """`file:line: dotted: problem`, for what is checked after loading (e.g. console.keys.X)."""
        return BadInput(f"{self.where(dotted)}: {dotted}: {problem}")

    def policy_for(self, cluster: str | None) -> PolicySource:
        """The cluster's policy, else the top-level one, else the defaults."""
        entry = self.clusters.get(cluster) if cluster else None
        if entry is not None and entry.policy is not None:
            return entry.policy
        if self.policy is not None:
            return self.policy
        return PolicySource(DEFAULT_POLICY, "defaults")


_HEADER_RE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY_RE = re.compile(
    r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*="
)
_PART_RE = re.compile(r"\"([^\"]*)\"|'([^']*)'|([A-Za-z0-9_-]+)")


def _dotted(text: str) -> str:
    return ".".join(next(p for p in m.groups() if p is not None) for m in _PART_RE.finditer(text))


def find_key_line(text: str, dotted: str) -> int | None:
    """Line (1-based) where a dotted key is set or its table opens; None when not found.

    tomllib reports values, not positions, so this re-scans the text: table headers set the
    prefix, and `a.b = …` lines are matched with that prefix (dotted and quoted keys included).
    """
    table = ""
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER_RE.match(line)
        if header:
            table = _dotted(header.group(1))
            if table == dotted:
                return number
            continue
        key = _KEY_RE.match(line)
        if key:
            full = f"{table}.{_dotted(key.group(1))}" if table else _dotted(key.group(1))
            if full == dotted or full.startswith(dotted + "."):
                return number
    return None


def _key_at_line(text: str, line: int) -> str | None:
    """The dotted key written on `line`, or the table open there, for syntax errors."""
    table = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        header = _HEADER_RE.match(raw)
        if header:
            table = _dotted(header.group(1))
        key = _KEY_RE.match(raw)
        if number == line:
            if key:
                return f"{table}.{_dotted(key.group(1))}" if table else _dotted(key.group(1))
            return table or None
    return None


_TOML_POS_RE = re.compile(r"^(?P<msg>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")


def load_toml(path: str | Path, what: str) -> TomlDocument:
    """Read a TOML file; BadInput names the file, the line and (when it can tell) the key."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{source}: cannot read {what} ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise BadInput(f"{source}: {what} is not UTF-8 text") from None
    import tomllib  # only when a file is read: every invocation would pay for it otherwise

    try:
        data = tomllib.loads(text)
    except (ValueError, RecursionError) as exc:
        if not isinstance(exc, tomllib.TOMLDecodeError):  # an integer past Python's digit limit, deep nesting
            raise BadInput(f"{source}:{_beyond_parser(text, exc)}") from None
        match = _TOML_POS_RE.match(str(exc))
        if not match:
            raise BadInput(f"{source}: invalid TOML: {exc}") from None
        line = int(match.group("line"))
        key = _key_at_line(text, line)
        at = f" {key}:" if key else ""
        raise BadInput(
            f"{source}:{line}:{at} invalid TOML: {match.group('msg')} (column {match.group('col')})"
        ) from None
    return TomlDocument(source, text, data)


#: how deep gpuq's TOML files may nest arrays and inline tables before one is called malformed
_MAX_DEPTH = 32
_LONG_INT_RE = re.compile(r"[0-9a-fA-Fx_]{4000,}")


def _beyond_parser(text: str, exc: BaseException) -> str:
    """``LINE: KEY: invalid TOML: why`` for what tomllib gives up on without a position: an
    integer of more digits than Python converts (4,300), nesting past the recursion limit."""
    if isinstance(exc, RecursionError):
        depth = 0  # (brackets inside strings are counted too: this only points at a line)
        for number, line in enumerate(text.splitlines(), start=1):
            for char in line:
                depth += (char in "[{") - (char in "]}")
                if depth > _MAX_DEPTH:
                    return _at(text, number, f"nested deeper than {_MAX_DEPTH} levels")
        return f" invalid TOML: nested deeper than {_MAX_DEPTH} levels"
    for number, line in enumerate(text.splitlines(), start=1):
        if _LONG_INT_RE.search(line):
            return _at(text, number, "an integer of more than 4300 digits")
    return f" invalid TOML: {exc}"


def _at(text: str, line: int, problem: str) -> str:
    key = _key_at_line(text, line)
    return f"{line}:{f' {key}:' if key else ''} invalid TOML: {problem}"


def _shown(value: Any) -> str:
    """A value for an error message: an integer of thousands of digits is not printed whole
    (Python refuses past 4,300), nor a long string or table."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "…"


def _policy_from(doc: TomlDocument, raw: Any, prefix: str) -> Policy:
    if not isinstance(raw, dict):
        raise doc.error(prefix.rstrip(".") or "policy", f"expected a table, got {_shown(raw)}")
    try:
        return policy_from_mapping(raw)
    except PolicyKeyError as exc:
        raise doc.error(prefix + exc.key, exc.problem) from None


def load_policy_file(path: str | Path) -> PolicySource:
    """Load a policy file; errors name the file, the line and the key."""
    doc = load_toml(path, "policy file")
    return PolicySource(_policy_from(doc, doc.data, ""), str(path))


def _policy_of(doc: TomlDocument, table: Mapping[str, Any], prefix: str) -> PolicySource | None:
    has_file = "policy_file" in table
    if has_file and "policy" in table:
        raise doc.error(prefix + "policy_file", "give either policy_file or a [policy] table, not both")
    if has_file:
        value = table["policy_file"]
        if not isinstance(value, str) or not value:
            raise doc.error(prefix + "policy_file", f"expected a file path string, got {_shown(value)}")
        file = Path(value).expanduser()
        if not file.is_absolute():
            file = Path(doc.path).parent / file
        return load_policy_file(file)
    if "policy" in table:
        name = f"{doc.path} [{prefix}policy]"
        return PolicySource(_policy_from(doc, table["policy"], prefix + "policy."), name)
    return None


def _string(doc: TomlDocument, table: Mapping[str, Any], key: str, dotted: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise doc.error(dotted, f"expected a non-empty string, got {_shown(value)}")
    return value


def _console_from(doc: TomlDocument, raw: Any) -> ConsoleConfig:
    if not isinstance(raw, dict):
        raise doc.error("console", f"expected a table [console], got {_shown(raw)}")
    for key in raw:
        if key not in _CONSOLE_KEYS:
            raise doc.error(f"console.{key}", f"unknown key (allowed: {', '.join(sorted(_CONSOLE_KEYS))})")
    refresh = raw.get("refresh", REFRESH_DEFAULT_S)
    if isinstance(refresh, bool) or not isinstance(refresh, int | float):
        raise doc.error("console.refresh", f"expected a number of seconds, got {_shown(refresh)}")
    if isinstance(refresh, float) and not math.isfinite(refresh):
        raise doc.error("console.refresh", f"expected a finite number, got {_shown(refresh)}")
    if not REFRESH_MIN_S <= refresh <= REFRESH_MAX_S:
        raise doc.error(
            "console.refresh",
            f"must be >= {REFRESH_MIN_S:g} and <= {REFRESH_MAX_S:g} (seconds between refreshes), got {_shown(refresh)}",
        )
    read_only = raw.get("read_only", False)
    if not isinstance(read_only, bool):
        raise doc.error("console.read_only", f"expected true or false, got {_shown(read_only)}")
    keys = raw.get("keys", {})
    if not isinstance(keys, dict):
        raise doc.error("console.keys", f"expected a table [console.keys] of action = \"key\", got {_shown(keys)}")
    for action, spec in keys.items():
        if not isinstance(spec, str) or not spec.strip():
            raise doc.error(f"console.keys.{action}", f"expected a key such as \"b\" or \"1,f1\", got {_shown(spec)}")
    return ConsoleConfig(
        refresh_s=float(refresh),
        theme=_string(doc, raw, "theme", "console.theme") or "dark",
        read_only=read_only,
        keys=MappingProxyType(dict(keys)),
    )


def _config_from(doc: TomlDocument) -> Config:
    raw = doc.data
    for key in raw:
        if key not in _TOP_KEYS:
            raise doc.error(key, f"unknown key (allowed: {', '.join(sorted(_TOP_KEYS))})")
    output = _string(doc, raw, "output", "output") or "table"
    if output not in OUTPUT_FORMATS:
        raise doc.error("output", f"{_shown(output)} is not one of {', '.join(OUTPUT_FORMATS)}")
    color = raw.get("color", True)
    if not isinstance(color, bool):
        raise doc.error("color", f"expected true or false, got {_shown(color)}")

    backend_options: dict[str, Mapping[str, Any]] = {}
    backends = raw.get("backends", {})
    if not isinstance(backends, dict):
        raise doc.error("backends", "expected a table of [backends.NAME] tables")
    for name, table in backends.items():
        if not isinstance(table, dict):
            raise doc.error(f"backends.{name}", f"expected a table [backends.{name}], got {_shown(table)}")
        backend_options[name] = MappingProxyType(dict(table))

    clusters: dict[str, ClusterConfig] = {}
    tables = raw.get("clusters", {})
    if not isinstance(tables, dict):
        raise doc.error("clusters", "expected a table of [clusters.NAME] tables")
    for name, table in tables.items():
        prefix = f"clusters.{name}."
        if not isinstance(table, dict):
            raise doc.error(f"clusters.{name}", f"expected a table [clusters.{name}], got {_shown(table)}")
        options = {k: v for k, v in table.items() if k not in _CLUSTER_RESERVED}
        clusters[name] = ClusterConfig(
            name=name,
            backend=_string(doc, table, "backend", prefix + "backend"),
            options=MappingProxyType(options),
            policy=_policy_of(doc, table, prefix),
        )

    cluster = _string(doc, raw, "cluster", "cluster")
    return Config(
        path=doc.path,
        backend=_string(doc, raw, "backend", "backend") or DEFAULT_BACKEND,
        cluster=cluster,
        output=output,
        color=color,
        policy=_policy_of(doc, raw, ""),
        backend_options=MappingProxyType(backend_options),
        clusters=MappingProxyType(clusters),
        console=_console_from(doc, raw.get("console", {})),
        document=doc,
    )


def load_config(path: str | Path | None = None) -> Config:
    """Load `path`, or the default file when it exists; defaults when there is none.

    An explicit `path` that cannot be read is an error; a missing default file is not.
    """
    if path is None:
        default = locations.config_file()
        if not default.is_file():
            return Config()
        path = default
    return _config_from(load_toml(path, "config file"))
