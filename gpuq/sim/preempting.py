"""Preemption for a blocked head: the victims `victims.decide` chose are stopped
(`stops.preempt_now`) and the head starts on the nodes chosen with them; or the "no" is
remembered (`victims.block`) with the moment to look again.

Functions on the `Simulator`: its scheduling pass calls `try_preempt` and `watch_overtake`, an
operator's checked plan (`actions`) `start_with`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

from gpuq.sim import stops
from gpuq.sim.jobs import SimJob
from gpuq.sim.victims import Choice, block, check_against_engine, decide

if TYPE_CHECKING:
    from gpuq.sim.simulator import Simulator

__all__ = ["start_with", "try_preempt", "watch_overtake"]

_INF: Final = math.inf


def try_preempt(sim: Simulator, head: SimJob) -> bool:
    """Preempt for a blocked head as the policy engine decides; True when the head started."""
    if head.claim:
        return False  # its victims are still saving (graceful)
    now = sim.now
    choice, unlock = decide(sim, head, now)
    if choice is None and sim.check_fast_path:
        check_against_engine(sim, head, now, None)  # "nothing to preempt" must agree too
    if choice is not None and start_with(sim, head, choice):
        return True
    if head.claim:  # victims are saving (graceful): their stop is the next moment that matters
        sim.blocked = None
        watch_overtake(sim, head)
        return False
    block(sim, head)
    watch_overtake(sim, head, unlock)
    return False


def watch_overtake(sim: Simulator, head: SimJob, unlock: float = _INF) -> None:
    """A pass when a waiting job's priority passes the head's (nothing else may happen then),
    or at `unlock` if that comes first."""
    when = min(unlock, sim.queue.next_overtake(head, sim.now, sim.rules.rate_now))
    if when < _INF:
        sim.recheck(when)


def start_with(sim: Simulator, head: SimJob, choice: Choice) -> bool:
    """Preempt `choice`'s victims for `head` and start it on `choice`'s nodes: the scheduler's
    own choice, or an operator's plan `actions` checked; True when the head started."""
    victims, nodes = choice
    mode = sim.rules.mode
    for victim, why in victims:
        stops.preempt_now(sim, victim, mode, head, why)
    placement = sim.gpus.place(head.gpus, nodes)
    if placement is None:
        return False
    sim.start(head, placement)
    return True
