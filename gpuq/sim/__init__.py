"""The embedded simulated cluster: a pure discrete-event simulator scheduling with the policy engine.

No I/O, no clock: the demo backend (`gpuq.backends.demo`) persists its state and maps wall time
to simulated time.

Feed and run a `Simulator`; look at it with `Simulator.snapshot` (`convert` has the other model
views), act on it with `actions`, save and restore it with `state`.

The event loop's modules may be compiled (setup.py, mypyc); `gpuq._native.select` (which reads
only gpuq's own files) makes sure a compiled build is used only while it matches the sources.
`NATIVE` says which one runs.
"""

from pathlib import Path

from gpuq import _native

#: True when the compiled simulator modules are in use (False: their Python sources)
NATIVE = _native.select("sim", Path(__file__).resolve().parent.parent)

from gpuq.sim.planner import Decision, Planner, engine_planner  # noqa: E402
from gpuq.sim.simulator import STATE_VERSION, Simulator  # noqa: E402
from gpuq.sim.workload import (  # noqa: E402
    DEFAULT_CLASSES,
    ClusterSpec,
    JobSpec,
    WorkloadStream,
    generate_jobs,
    one_gpu_jobs,
)

__all__ = [
    "DEFAULT_CLASSES",
    "NATIVE",
    "STATE_VERSION",
    "ClusterSpec",
    "Decision",
    "JobSpec",
    "Planner",
    "Simulator",
    "WorkloadStream",
    "engine_planner",
    "generate_jobs",
    "one_gpu_jobs",
]
