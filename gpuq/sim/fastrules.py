"""The policy as the simulator's event loop reads it: its numbers, and its rules on `SimJob`s.

Each rule is defined once, in the rule kernel (`gpuq.policy.kernel`); the methods here only say
which of a SimJob's fields each argument is: a queued job's effective priority
(`queued_priority`), a running job's (`running_priority`), the GPU-seconds a preemption would
lose (`lost`, which `cost` weighs), and the time-limited protections (`protected_at`,
`protected_until`: exemption, minimum runtime, 24 h cap). The kernel is compiled with the loop
(`gpuq._native`), so these are direct calls on unboxed floats. Times are on the microsecond grid,
which the model's datetimes hold exactly, so the simulator and the policy engine judge the same
floats.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpuq.model import JobClass
from gpuq.policy.config import Policy
from gpuq.policy.kernel import (
    effective_priority_of,
    gpu_seconds_lost_of,
    over_urgent_quota,
    protected_until,
    requester_priority_of,
    time_protected,
    too_young,
    victim_cost_of,
)
from gpuq.sim.jobs import SimJob, on_grid, strictly_after

__all__ = ["ClassInfo", "FastRules"]


class ClassInfo:
    """A class as resolved with the policy: what the loop reads per job."""

    __slots__ = ("preemptible", "max_wait", "rate")

    def __init__(self, preemptible: bool, max_wait: float | None, rate: float) -> None:
        self.preemptible = preemptible
        self.max_wait = max_wait
        self.rate = rate if max_wait is not None else 0.0


class FastRules:
    """The policy's numbers, copied once per policy (a read on the frozen, interpreted `Policy`
    costs a dictionary lookup, and the loop makes several per decision), and the rules on them."""

    def __init__(self, policy: Policy, classes: Sequence[JobClass]) -> None:
        self.classes = tuple(classes)
        self.cinfo: dict[str, ClassInfo] = {}
        self.set_policy(policy)

    def set_policy(self, policy: Policy) -> None:
        self.policy = policy
        self.urgent = float(policy.urgent_priority)
        self.delta = policy.delta
        self.mode = policy.mode
        self.grace = policy.grace_period_s
        self.min_runtime = policy.min_runtime_s
        self.cap = policy.max_preemptions_per_day
        self.default_ckpt = policy.default_checkpoint_interval_s
        self.lw = policy.lost_work_weight
        self.pw = policy.priority_weight
        self.gated = self.min_runtime > 0 or self.cap > 0  # time-limited protections
        self.young_at_start = too_young(0.0, self.min_runtime)  # a job is protected as it starts
        self.cinfo = {}
        for cls in self.classes:
            self.class_info(cls.name)

    def class_info(self, name: str) -> ClassInfo:
        info = self.cinfo.get(name)
        if info is None:
            base = None
            for cls in self.classes:
                if cls.name == name:
                    base = cls
                    break
            resolved = self.policy.resolve_class(base, name)
            info = ClassInfo(resolved.preemptible, resolved.max_wait_s, self.policy.aging_rate(name))
            self.cinfo[name] = info
        return info

    # ---- the kernel's rules on a SimJob's fields (compiled together: direct calls) ------------

    def queued_priority(self, job: SimJob, now: float) -> float:
        """`kernel.effective_priority_of` for a queued job: urgency, else base plus aging past
        max_wait once its aging event has come (`job.aging`; the queue's groups move a job to its
        aging line then: before it, its priority is flat. At that very tick, for a max_wait off
        the binary grid, `now - qs` may still round just short of it: the kernel decides)."""
        if job.urgent:
            return self.urgent
        if job.aging:
            info = self.cinfo[job.cls]
            return effective_priority_of(float(job.priority), urgent=False, urgent_priority=self.urgent,
                                         waited_s=now - job.qs, max_wait_s=info.max_wait,
                                         rate_per_min=info.rate)  # fmt: skip
        return float(job.priority)

    def running_priority(self, job: SimJob) -> float:
        """`kernel.effective_priority_of` for a running job: urgency, else base plus the aging it
        had earned when it started (its wait ended as the run began); constant for the whole run."""
        info = self.cinfo[job.cls]
        return effective_priority_of(float(job.priority), urgent=job.urgent, urgent_priority=self.urgent,
                                     waited_s=None if job.run_start is None else job.began - job.qs,
                                     max_wait_s=info.max_wait, rate_per_min=info.rate)  # fmt: skip

    def rate_now(self, job: SimJob) -> float:
        """Points a minute a waiting job's priority grows by now: its class's aging rate once it
        ages (`job.aging`), 0.0 before that and for an urgent job (urgency does not age)."""
        return self.cinfo[job.cls].rate if job.aging and not job.urgent else 0.0

    def lost(self, job: SimJob, now: float) -> float:
        """`kernel.gpu_seconds_lost_of` for a running job: GPU-seconds lost if preempted now."""
        start: float = job.run_start  # type: ignore[assignment]
        interval = job.ckpt if job.ckpt is not None else self.default_ckpt
        return gpu_seconds_lost_of(job.gpus, start, job.last_checkpoint(now), interval, now)

    def cost(self, job: SimJob, now: float) -> float:
        """`kernel.victim_cost_of` for a running job, at the priority `_arm` fixed (`job.rep`)."""
        return victim_cost_of(self.lost(job, now), job.rep, self.lw, self.pw)

    def protected_at(self, job: SimJob, now: float) -> bool:
        """`kernel.time_protected` for a running job: exempt, younger than the minimum runtime
        (run time: time suspended does not count), or preempted `cap` times in the 24 h up to `now`."""
        return time_protected(exempt_until=job.exempt_until, start=job.began + job.susp,
                              min_runtime_s=self.min_runtime, preemption_times=job.preempt_times, cap=self.cap,
                              now=now)  # fmt: skip

    def protected_until(self, job: SimJob, now: float) -> float:
        """`kernel.protected_until` for a running job: when its exemption, minimum runtime and
        24 h cap have all lapsed as things stand at `now` (0.0: none protects it now)."""
        return protected_until(exempt_until=job.exempt_until, start=job.began + job.susp,
                               min_runtime_s=self.min_runtime, preemption_times=job.preempt_times, cap=self.cap,
                               now=now)  # fmt: skip

    def protection_end(self, job: SimJob, now: float) -> float:
        """When a running victim stops being protected (0.0 = not protected now): the first tick
        at which the kernel no longer protects it. `protected_until` gives the moment; on the
        microsecond grid `protected_at` has the last word, so the simulator and the policy
        engine never disagree at the boundary. Asked once per run of a job, when first needed."""
        until = self.protected_until(job, now)
        if until <= 0.0:
            return 0.0
        tick = on_grid(until)
        while self.protected_at(job, tick):
            tick = strictly_after(tick)
        return tick

    def prot_of(self, job: SimJob, now: float) -> float:
        """When a running job's protections end (0.0: none protects it), `protection_end` the
        first time it is asked (`Simulator.arm` leaves -1.0). Asked at any moment of the run it
        answers the same for every moment from then on: the end does not move while it is
        protected, and once it lapses nothing protects the run again until it is armed anew."""
        prot = job.prot
        if prot < 0:
            prot = job.prot = self.protection_end(job, now)
        return prot

    # ---- the kernel itself (asked once per decision, not per event) -----------------------------

    def priority_of(self, job: SimJob, now: float, queued: bool) -> float:
        """The kernel's effective priority of any job (queued: its wait so far; else the wait up
        to its last start): for the few places outside the loop that ask."""
        info = self.class_info(job.cls)
        if queued:
            waited: float | None = now - job.qs
        else:
            waited = None if job.run_start is None else job.began - job.qs
        return effective_priority_of(
            float(job.priority), urgent=job.urgent, urgent_priority=self.urgent,
            waited_s=waited if info.max_wait is not None else None, max_wait_s=info.max_wait,
            rate_per_min=self.policy.aging_rate(job.cls),
        )  # fmt: skip

    def requester_priority(self, head: SimJob, now: float, running: Iterable[SimJob]) -> float:
        """The head's priority as the engine counts it: urgency only within its tenant's quota
        (`rules.requester_priority_of`; `running`: the jobs holding GPUs)."""
        if not head.urgent:
            return self.queued_priority(head, now)
        quota, held = self._urgent_use(head, running)
        return requester_priority_of(self.unurgent_priority(head, now), urgent=True, urgent_priority=self.urgent,
                                     quota=quota, urgent_gpus_held=held, gpus=head.gpus)  # fmt: skip

    def urgency_counts(self, head: SimJob, running: Iterable[SimJob]) -> bool:
        """Whether an urgent head is within its tenant's urgent quota (`rules.over_urgent_quota`),
        so that it is ranked at the urgent priority."""
        quota, held = self._urgent_use(head, running)
        return not over_urgent_quota(quota, held, head.gpus)

    def _urgent_use(self, head: SimJob, running: Iterable[SimJob]) -> tuple[int, int]:
        """The head's tenant's urgent quota, and the GPUs its urgent jobs hold (0 when unlimited)."""
        quota = self.policy.tenant_urgent_quota(head.tenant)
        held = 0
        if quota > 0:
            held = sum(j.gpus for j in running if j.urgent and j.tenant == head.tenant)
        return quota, held

    def unurgent_priority(self, job: SimJob, now: float) -> float:
        """A queued job's priority without its urgency (`rules.effective_priority_of`): base plus
        aging past max_wait, from its wait alone (an urgent job is never marked `aging`)."""
        info = self.cinfo[job.cls]
        return effective_priority_of(
            float(job.priority), urgent=False, urgent_priority=self.urgent,
            waited_s=now - job.qs if info.max_wait is not None else None, max_wait_s=info.max_wait,
            rate_per_min=self.policy.aging_rate(job.cls),
        )  # fmt: skip
