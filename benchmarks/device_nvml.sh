#!/usr/bin/env bash
# Run once on a machine with an NVIDIA GPU and driver: what `gpuq gpus --local` shows there, next
# to nvidia-smi's own view, and how long one NVML poll takes. Installs nothing; measures, asserts
# nothing. Usage: benchmarks/device_nvml.sh [PYTHON]   (default: .venv/bin/python, else python3)
set -u
cd "$(dirname "$0")/.."
PY=${1:-}
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
export COLUMNS=${COLUMNS:-160} PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD

echo "== host: $(hostname)  python: $("$PY" -c 'import sys; print(sys.version.split()[0])')"
"$PY" -c 'from importlib.metadata import version; print("== nvidia-ml-py", version("nvidia-ml-py"))' 2>&1
if command -v nvidia-smi >/dev/null; then
    echo "== nvidia-smi"
    nvidia-smi --query-gpu=index,name,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu \
        --format=csv 2>&1
    nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory,process_name --format=csv 2>&1
fi
for output in json table wide csv; do
    echo "== gpuq gpus --local -o $output"
    "$PY" -m gpuq gpus --local -o "$output"
    echo "(exit $?)"
done
echo "== one NVML poll (NvmlReader with ttl 0), 20 polls after the first"
"$PY" - <<'PY'
import time
from gpuq.service import NvmlReader

reader = NvmlReader(ttl_s=0.0)
t0 = time.perf_counter()
first = reader.read()
t1 = time.perf_counter()
times = []
for _ in range(20):
    s = time.perf_counter()
    reader.read()
    times.append(time.perf_counter() - s)
times.sort()
print(f"available={first.available} gpus={len(first.gpus)} reason={first.reason}")
print(f"first read (import + nvmlInit + poll): {1000 * (t1 - t0):.1f} ms")
print(f"later polls: median {1000 * times[len(times) // 2]:.2f} ms, max {1000 * times[-1]:.2f} ms")
print("processes:", [(g.index, [(p.pid, p.job_id, p.pod_uid) for p in g.processes]) for g in first.gpus])
reader.close()
PY
