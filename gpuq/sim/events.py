"""The simulator's event kinds and the shape of its event heap's entries.

A module of their own so that the event loop (`gpuq.sim.simulator`), the operator actions that
schedule events (`gpuq.sim.actions`) and the saved state that names them (`gpuq.sim.state`)
share one definition without importing one another's internals.
"""

from __future__ import annotations

from typing import Final

from gpuq.sim.jobs import SimJob

__all__ = ["AGE", "AGES", "ARRIVE", "DRAIN", "FINISH", "GENERATE", "KIND_NAMES", "PASS", "RECHECK", "Event"]

# Small ints: compared only for equality in the loop; Final, so the compiled loop uses the numbers
# themselves instead of looking the names up.
ARRIVE: Final = 0
FINISH: Final = 1
AGE: Final = 2
DRAIN: Final = 3
RECHECK: Final = 4
GENERATE: Final = 5
PASS: Final = 6
#: the wake-up for the jobs lined up to start aging (`gpuq.sim.aging`); never saved
AGES: Final = 7
#: The event kinds by name, in the order of their numbers (saved state names them).
KIND_NAMES: Final = ("arrive", "finish", "age", "drain", "recheck", "generate", "pass", "ages")

#: (time, sequence number, kind, job, version): a job's events are stale once its version moved.
Event = tuple[float, int, int, "SimJob | None", int]
