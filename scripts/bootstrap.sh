# Sourced by scripts/demo and scripts/test: make .venv with gpuq installed (extras in $1).
# Works on a fresh Debian 12: installs python3-venv when the interpreter cannot make venvs.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${GPUQ_VENV:-$repo_root/.venv}"
extras="${1:-}"

need_python() {
    command -v python3 >/dev/null 2>&1 \
        && python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
        && python3 -c 'import ensurepip, venv' 2>/dev/null
}

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

apt_install() {  # apt-get install "$@", updating the package lists only when that is needed
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "$@" >/dev/null 2>&1 \
        || { "${sudo_cmd[@]}" apt-get update -qq \
             && DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "$@" >/dev/null; }
}

if ! need_python; then
    echo "gpuq: installing Python 3.11 with venv support (Debian packages)" >&2
    apt_install python3 python3-venv python3-pip
fi

# setup.py compiles the simulator's event loop (mypyc) when a C compiler and Python's headers are
# there: about twice the events per second. Without them gpuq installs and works the same, slower.
have_compiler() {
    command -v cc >/dev/null 2>&1 \
        && [ -f "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ]
}
if ! have_compiler && [ "${GPUQ_PURE_PYTHON:-}" != "1" ] && command -v apt-get >/dev/null 2>&1 \
    && { [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; }; then
    echo "gpuq: installing a C compiler and Python's headers to compile the simulator (Debian packages)" >&2
    apt_install gcc python3-dev || echo "gpuq: could not install them; the simulator runs as pure Python" >&2
fi

# The console's terminal test (tests/tui/test_tmux.py) drives `gpuq tui` inside tmux.
case ",$extras," in
    *,dev,*)
        if ! command -v tmux >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
            && { [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; }; then
            echo "gpuq: installing tmux for the console's terminal test (Debian package)" >&2
            apt_install tmux || echo "gpuq: could not install tmux; tests/tui/test_tmux.py will fail" >&2
        fi
        ;;
esac

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
stamp="$venv/.gpuq-installed${extras:+-$extras}"
native_stale() {  # the compiled modules no longer match their sources (an edit, a checkout)
    "$venv/bin/python" - "$repo_root/gpuq" <<'PY' 2>/dev/null
import importlib.util, sys
from pathlib import Path
folder = Path(sys.argv[1])
spec = importlib.util.spec_from_file_location("gpuq_native_check", folder / "_native.py")  # stdlib only
native = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native)
sys.exit(0 if native.compiled_is_current(folder) is False else 1)
PY
}
if [ ! -f "$stamp" ] || [ "$repo_root/pyproject.toml" -nt "$stamp" ] || [ "$repo_root/setup.py" -nt "$stamp" ]; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$repo_root${extras:+[$extras]}"
    # An editable install leaves gpuq's own modules uncompiled (pip compiles a normal install's),
    # and where PYTHONDONTWRITEBYTECODE is set every gpuq call would compile them again (~40 ms).
    "$venv/bin/python" -m compileall -q "$repo_root/gpuq" >/dev/null
    touch "$stamp"
elif native_stale; then
    echo "gpuq: sources of the compiled modules changed since they were compiled; compiling them again" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$repo_root"
fi
