"""`gpuq completion bash|zsh|fish`: print the shell completion script.

The same scripts are committed under `completions/` (regenerate with
`python -m gpuq.cli.completion completions/`); job ids complete dynamically from the backend.

fish gets gpuq's own variant of click's script (`FishComplete`): click's splits each answer at
every comma, which cuts a description such as "pending, 4 GPUs, alice, normal" after its first
word, and lets fish sort the answers alphabetically, which undoes "most recent job first".
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.shell_completion import FishComplete, add_completion_class

from gpuq.cli.options import global_options
from gpuq.cli.output import write_text

__all__ = ["FILES", "GpuqFishComplete", "completion", "completion_script", "register", "write_completion_files"]

#: Shell → committed file name under completions/.
FILES = {"bash": "gpuq.bash", "zsh": "_gpuq", "fish": "gpuq.fish"}

# click's fish script, but: split each answer once, at the comma after its type (the value and
# its tab-separated description keep theirs), and keep gpuq's order (`--keep-order`).
_SOURCE_FISH = """\
function %(complete_func)s;
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) \
COMP_CWORD=(commandline -t) %(prog_name)s);

    for completion in $response;
        set -l metadata (string split --max 1 "," $completion);

        if test $metadata[1] = "dir";
            __fish_complete_directories $metadata[2];
        else if test $metadata[1] = "file";
            __fish_complete_path $metadata[2];
        else if test $metadata[1] = "plain";
            echo $metadata[2];
        end;
    end;
end;

complete --no-files --keep-order --command %(prog_name)s --arguments \
"(%(complete_func)s)";
"""


class GpuqFishComplete(FishComplete):
    source_template = _SOURCE_FISH


def register() -> None:
    """Use gpuq's fish script and answers (main() calls this when a shell asks to complete)."""
    add_completion_class(GpuqFishComplete, "fish")


def completion_script(shell: str) -> str:
    from click.shell_completion import get_completion_class

    from gpuq.cli.main import cli

    register()

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - the Choice below rules it out
        raise click.BadParameter(f"unsupported shell {shell!r}")
    # BashComplete.source() runs `bash` to check its version; the script does not depend on it.
    comp = cls(cli, {}, "gpuq", "_GPUQ_COMPLETE")
    return comp.source_template % comp.source_vars()


def write_completion_files(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for shell, name in FILES.items():
        path = directory / name
        path.write_text(completion_script(shell), encoding="utf-8")
        written.append(path)
    return written


@click.command("completion")
@click.argument("shell", type=click.Choice(sorted(FILES)))
@global_options  # accepted (and ignored) like everywhere else, so aliases with global flags work
def completion(shell: str) -> None:
    """Print the completion script for SHELL.

    \b
    bash:  gpuq completion bash > ~/.local/share/bash-completion/completions/gpuq
    zsh:   gpuq completion zsh > "${fpath[1]}/_gpuq"
    fish:  gpuq completion fish > ~/.config/fish/completions/gpuq.fish
    """
    write_text(completion_script(shell))


if __name__ == "__main__":
    for written_path in write_completion_files(Path(sys.argv[1] if len(sys.argv) > 1 else "completions")):
        print(written_path)
