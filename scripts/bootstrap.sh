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

if ! need_python; then
    echo "gpuq: installing Python 3.11 with venv support (Debian packages)" >&2
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
fi

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
stamp="$venv/.gpuq-installed${extras:+-$extras}"
if [ ! -f "$stamp" ] || [ "$repo_root/pyproject.toml" -nt "$stamp" ]; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$repo_root${extras:+[$extras]}"
    # An editable install leaves gpuq's own modules uncompiled (pip compiles a normal install's),
    # and where PYTHONDONTWRITEBYTECODE is set every gpuq call would compile them again (~40 ms).
    "$venv/bin/python" -m compileall -q "$repo_root/gpuq" >/dev/null
    touch "$stamp"
fi
