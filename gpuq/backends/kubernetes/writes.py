"""The API writes an action makes: each fixed when prepared (`Write`), tried first as a server-side
dry run, then sent in order with one retry on a stale resourceVersion and a rollback of the
earlier steps when a later one fails (`Writer`).

Server answers become gpuq errors an operator can act on: a 429 from a PodDisruptionBudget is
"blocked by PodDisruptionBudget NS/NAME" (the budget named in the Status causes), a 422 the
server's validation message (each distinct cause once: the server repeats them), a 409 a changed
object (retried once after a fresh read where the step can be rebuilt), 403 `PermissionDenied`
naming the verb and resource (exit 4), an unreachable server `Unreachable` naming it (exit 3).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any
from urllib.parse import quote, urlencode

from gpuq.backends.base import ApiRequest
from gpuq.backends.kubernetes.client import ApiError, KubeClient, Response, describe_request
from gpuq.errors import GpuqError, JobChanged, Refused
from gpuq.textsafe import visible

__all__ = ["JSON_PATCH", "MERGE_PATCH", "Step", "Write", "Writer", "object_path"]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
_NO_QUERY: Mapping[str, str] = MappingProxyType({})
_BUDGET = re.compile(r"The disruption budget (\S+) (.*)")
_NAMESPACE = re.compile(r"/namespaces/([^/]+)/")


def object_path(base: str, namespace: str, resource: str, name: str, sub: str = "") -> str:
    """``/api/v1/namespaces/NS/pods/NAME[/sub]`` with each name quoted (they come from the API,
    but a path never carries an unquoted outside string)."""
    path = f"{base}/namespaces/{quote(namespace, safe='')}/{resource}/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


@dataclass(frozen=True, slots=True)
class Write:
    """One request that changes something, exactly as it will be sent."""

    method: str
    path: str
    body: Any = None
    content_type: str | None = None
    query: Mapping[str, str] = field(default_factory=lambda: _NO_QUERY)

    def request(self) -> ApiRequest:
        """The audit log's record of it (the query in the path)."""
        target = self.path + ("?" + urlencode(dict(self.query)) if self.query else "")
        return ApiRequest(self.method, target, self.body, self.content_type)

    def dry(self) -> Write:
        """The same request as a server-side dry run. A DELETE with a body takes its options from
        the body alone (the API server then ignores the query), so there it is ``dryRun`` in the
        DeleteOptions; elsewhere the ``dryRun=All`` query parameter."""
        if self.method == "DELETE" and isinstance(self.body, dict):
            return replace(self, body={**self.body, "dryRun": ["All"]})
        return replace(self, query={**self.query, "dryRun": "All"})


#: given the object's body as read again after a conflict: the write rebuilt on it, None when the
#: failure was not staleness (a 422 that is a real validation error); JobChanged when the object
#: changed in a way the action depends on
Rebuild = Callable[[bytes, ApiError], "Write | None"]


@dataclass(frozen=True, slots=True)
class Step:
    write: Write
    #: in words, for messages ("create PodDisruptionBudget ml-team-a/gpuq-exempt-x")
    what: str
    #: the object to read again when the write meets a stale resourceVersion, and how to rebuild it
    reread: str | None = None
    rebuild: Rebuild | None = None
    #: what takes this step back when a later one fails (None: nothing to take back)
    undo: Write | None = None


class Writer:
    """Sends the steps of one action (see the module docstring)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def dry_run(self, steps: tuple[Step, ...]) -> None:
        """Send each step as a server-side dry run (nothing is stored); the server's refusal as a
        gpuq error. Steps are checked one by one against the objects as they are now."""
        for step in steps:
            self._send(step.write.dry(), step.what)

    def run(self, steps: tuple[Step, ...], sent: list[ApiRequest]) -> list[Response]:
        """Send the steps in order (`sent` gets each request as sent, retries and rollbacks
        included). When one fails, the steps before it are undone, latest first, and the error
        says what was rolled back (or what could not be, to be undone by hand)."""
        done: list[Step] = []
        answers: list[Response] = []
        for step in steps:
            try:
                answers.append(self._step(step, sent))
            except GpuqError as exc:
                if not done:
                    raise
                raise type(exc)(f"{exc}; {self._rollback(done, sent)}") from None
            done.append(step)
        return answers

    # ------------------------------------------------------------------ one step
    def _step(self, step: Step, sent: list[ApiRequest]) -> Response:
        write = step.write
        for attempt in (1, 2):
            sent.append(write.request())
            try:
                return self._raw(write)
            except ApiError as exc:
                if attempt == 1 and step.reread is not None and step.rebuild is not None and _maybe_stale(write, exc):
                    fresh = self.client.request("GET", step.reread).body
                    rebuilt = step.rebuild(fresh, exc)
                    if rebuilt is not None:
                        write = rebuilt
                        continue
                raise self.refusal(write, exc, step.what) from None
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _rollback(self, done: list[Step], sent: list[ApiRequest]) -> str:
        undone, failed = [], []
        for step in reversed(done):
            if step.undo is None:
                continue
            sent.append(step.undo.request())
            try:
                self._send(step.undo, f"undo: {step.what}")
                undone.append(step.what)
            except GpuqError as exc:
                failed.append(f"{step.what} ({exc})")
        if failed:
            return ("ROLLBACK FAILED, undo by hand: " + "; ".join(failed)
                    + (f" (rolled back: {'; '.join(undone)})" if undone else ""))  # fmt: skip
        return f"rolled back: {'; '.join(undone)}" if undone else "nothing to roll back"

    def _raw(self, write: Write) -> Response:
        return self.client.request(write.method, write.path, write.query or None, body=write.body,
                                   content_type=write.content_type)  # fmt: skip

    def _send(self, write: Write, what: str) -> Response:
        try:
            return self._raw(write)
        except ApiError as exc:
            raise self.refusal(write, exc, what) from None

    # ------------------------------------------------------------------ errors
    def refusal(self, write: Write, exc: ApiError, what: str) -> GpuqError:
        """The gpuq error for a server's refusal of `write` (`what` it does, in words)."""
        status = exc.status
        message = visible(status.message) if status is not None and status.message else str(exc)
        verb, resource = describe_request(write.method, write.path, write.query)
        server = self.client.server
        causes = status.details.causes if status is not None and status.details is not None else ()
        if exc.code == 429:
            budgets = [m for m in (_BUDGET.match(c.message) for c in causes if c.reason == "DisruptionBudget") if m]
            if budgets:
                found = _NAMESPACE.search(write.path)
                ns = f"{found.group(1)}/" if found else ""
                why = "; ".join(f"blocked by PodDisruptionBudget {ns}{visible(m.group(1))} (it "
                                f"{visible(m.group(2)).rstrip('.')})" for m in budgets)  # fmt: skip
                retry = status.details.retry_after_seconds if status is not None and status.details else None
                later = f"; the server says retry in {retry} s" if retry else ""
                return Refused(f"cannot {what}: {why}{later}; nothing was done")
            return Refused(f"Kubernetes API {server} is throttling requests (HTTP 429) on {verb} {resource}: "
                           f"{message}; nothing was done, retry later")  # fmt: skip
        if exc.code == 422:
            extra = []
            for cause in causes:
                text = visible(f"{cause.field}: {cause.message}" if cause.field else cause.message)
                if cause.message and cause.message not in message and text not in extra:
                    extra.append(text)
            detail = f" ({'; '.join(extra)})" if extra else ""
            return Refused(f"Kubernetes API {server} refused {verb} {resource}: {message}{detail}")
        if exc.code == 409:
            reason = status.reason if status is not None else ""
            if reason == "AlreadyExists":
                return Refused(f"Kubernetes API {server}: {verb} {resource}: {message}")
            return JobChanged(f"Kubernetes API {server}: {verb} {resource}: {message}; nothing more was done: "
                              "look again and retry")  # fmt: skip
        return Refused(str(exc))


def _maybe_stale(write: Write, exc: ApiError) -> bool:
    """A 409 Conflict (a patch carrying a resourceVersion that is no longer current), or a 422
    for a JSON patch whose first operation tests the resourceVersion (recording 61: a failed test
    is answered 422 with no cause)."""
    if exc.code == 409:
        return exc.status is None or exc.status.reason in ("Conflict", "")
    if exc.code == 422 and write.content_type == JSON_PATCH and isinstance(write.body, list) and write.body:
        first = write.body[0]
        return (
            isinstance(first, dict) and first.get("op") == "test" and first.get("path") == "/metadata/resourceVersion"
        )
    return False
