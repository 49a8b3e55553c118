"""How `SlurmBackend` reads the queue and the GPU indexes of the jobs holding GPUs.

``squeue --Format`` (with AdminComment and restart counts where squeue knows them) gives every
job, parsed while squeue still prints it. The GPU indexes come from ``scontrol show job -d``: one
``-o ID`` read per holder when they are few (at most ``detail_one_by_one_max``), else one full
``-o`` read, which is cheaper for many. When the previous read (this process's, or the last
invocation's through the disk cache) had to read more holders than that, the full read starts
beside squeue instead of after it; its details fill only jobs whose StartTime is the same in both
reads, and whatever it cannot fill (a job started, or requeued and started again, between the two
reads) is read after squeue as before, as is everything when it failed. A wrong guess costs time,
never indexes.

A running job's indexes do not change during its run, so the indexes read for each holder are kept
(`held`, saved in the disk cache) with the StartTime, nodes and GPU count squeue showed for it; a
holder squeue shows with all three the same takes them from there, and only the others count as
needing detail, for the rule above and for the hint.

Thread safety: what one read learns (the held indexes, the hint, how it read) is published at its
end in one step, under the reader's lock, which the disk cache's save takes too.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from gpuq.backends.slurm.diskcache import Held, held_from_json, held_to_json
from gpuq.backends.slurm.jobs import ClassKey, QueueRead
from gpuq.backends.slurm.runner import Runner, parse_output
from gpuq.backends.slurm.text import (
    JobDetail,
    apply_details,
    detail_wanted,
    parse_scontrol_detail,
    parse_squeue_format,
    squeue_format_arg,
)
from gpuq.errors import GpuqError, NotFound, Refused
from gpuq.model import JobState

__all__ = ["DETAIL_ONE_BY_ONE_MAX", "QueueReader", "QueueStats"]

#: Up to this many GPU-holding jobs, read their GPU indexes one job at a time; beyond it one full
#: ``scontrol show job -d -o`` is cheaper (the README has the measurements).
DETAIL_ONE_BY_ONE_MAX = 32

#: A holder's run as squeue shows it: StartTime (epoch), nodes (sorted), GPU count, whether it is
#: suspended (a suspend or a resume changes what ``scontrol show job -d`` says of the run's
#: suspension: the job is read again then, and only then).
Run = tuple[float, tuple[str, ...], int, bool]


@dataclass(frozen=True, slots=True)
class QueueStats:
    """How the last queue read went (for tests and benchmarks).

    `read_path`: "cli" or "pyslurm". `detail_read`: how it got GPU indexes: "none" (none read),
    "one-by-one", "full" (after squeue), "beside" (a full read run beside squeue, all of it
    used) or "beside+N" (N more read after). `detail_cached`: how many holders took their
    indexes from the held ones instead.
    """

    read_path: str = "cli"
    detail_read: str = "none"
    detail_cached: int = 0


class QueueReader:
    """The queue of one cluster, read through squeue and scontrol (or pyslurm)."""

    def __init__(
        self, runner: Runner, detail_one_by_one_max: int, show_config: Callable[[], Mapping[str, str]]
    ) -> None:
        self.runner = runner
        self.detail_one_by_one_max = detail_one_by_one_max
        self._show_config = show_config
        self._lock = threading.Lock()
        #: GPU-holding jobs the last read had to read indexes for, not served from `held` (None:
        #: not known); kept on disk, so the next invocation knows whether to read all job details
        #: beside squeue
        self.gpu_holders: int | None = None
        self._gpu_holders_saved: int | None = None
        #: the GPU indexes of the last read's holders by raw id (None: not known), kept on disk
        self._held: dict[str, Held] | None = None
        self._held_saved: dict[str, Held] | None = None
        self.stats = QueueStats()
        self._pyslurm: Any = None  # module, False (unusable), or None (not looked for yet)

    # ------------------------------------------------------------------ the disk cache's part
    def adopt(self, part: Mapping[str, Any]) -> None:
        """The hint and the held indexes an earlier invocation saved (`diskstate`)."""
        holders = part.get("gpu_holders")
        with self._lock:
            if self.gpu_holders is None and isinstance(holders, int) and not isinstance(holders, bool):
                self.gpu_holders = self._gpu_holders_saved = holders
            if self._held is None:
                self._held = self._held_saved = held_from_json(part.get("held"))

    def forget(self, raw_id: str) -> bool:
        """Drop what is held for job `raw_id` (its indexes and suspension), so that the next read
        reads its details again; True when something was held. A job read alone (an action, `gpuq
        job`) may have been suspended and resumed since the last read, which squeue cannot show."""
        with self._lock:
            if not self._held or raw_id not in self._held:
                return False
            self._held = {raw: entry for raw, entry in self._held.items() if raw != raw_id}
            return True

    def unsaved(self) -> bool:
        """Whether the held indexes changed, or the hint crossed `detail_one_by_one_max`, since
        they were last saved (only then is it worth a write: the hint decides whether the next
        read starts the full detail read beside squeue)."""
        with self._lock:
            if self.gpu_holders is None:
                return False
            if self._held is not None and self._held != self._held_saved:
                return True
            saved = self._gpu_holders_saved
            limit = self.detail_one_by_one_max
            return saved is None or (saved > limit) != (self.gpu_holders > limit)

    def saved_part(self) -> dict[str, Any] | None:
        """The disk cache's ``queue`` part (None: nothing known yet), noted as saved."""
        with self._lock:
            if self.gpu_holders is None:
                return None
            part: dict[str, Any] = {"gpu_holders": self.gpu_holders}
            self._gpu_holders_saved = self.gpu_holders
            if self._held is not None:
                part["held"] = held_to_json(self._held)
                self._held_saved = self._held
            return part

    # ------------------------------------------------------------------ the read
    def read(self, class_key_of: Callable[[], ClassKey]) -> QueueRead:
        """The queue with every holder's GPU indexes (see the module docstring). ``class_key_of``
        gives the class key once the config knows it; squeue starts before that."""
        via_pyslurm = self._read_pyslurm(class_key_of)
        if via_pyslurm is not None:
            self._publish(QueueStats(read_path="pyslurm"))
            return via_pyslurm
        with self._lock:
            held, hint = self._held, self.gpu_holders
        threshold = self.detail_one_by_one_max
        how = _Progress()
        with ThreadPoolExecutor(max_workers=1) as side:
            beside = side.submit(self._full_details, starts=True) if (hint or 0) > threshold else None

            # The squeue lines are parsed while squeue still prints them; that needs the class key
            # (from the config: cached, or being read right now), so squeue starts first and its
            # lines wait in the pipe for it. The GPU indexes come after, from scontrol.
            def consume(lines: Iterable[str]) -> QueueRead:
                key = class_key_of()
                return parse_output("squeue --Format", lambda: parse_squeue_format(lines, key))

            try:
                read: QueueRead = self.runner.stream(["squeue", "-h", "-a", squeue_format_arg()], consume)
            except Refused as exc:
                if "Invalid job format specification" not in str(exc):
                    raise
                # An older squeue without AdminComment/RestartCnt: they come from the full detail read.
                key = class_key_of()
                text = self.runner.run(["squeue", "-h", "-a", squeue_format_arg(extended=False)])
                details = self._full_details()
                self._publish(QueueStats(detail_read="full"))
                return parse_output("squeue --Format", lambda: parse_squeue_format(text, key, details))
            runs = _holder_runs(read)
            how.cached = _use_held(held, read, runs)
            holders = len(read.needs_detail)
            if beside is not None:
                try:
                    early: dict[str, JobDetail] | None = beside.result()
                except GpuqError:
                    early = None  # read again below if still needed; its own error then shows
                if early is not None:
                    # every_holding, as after squeue below: the same jobs get indexes either way.
                    read = apply_details(read, early, every_holding=True, same_run=True)
                    how.detail = f"beside+{len(read.needs_detail)}" if read.needs_detail else "beside"
        read = self._read_details(read, threshold, how)
        kept = _held_after(read, runs)
        if held is None:
            # Nothing was known before this read, so its misses say nothing about how many jobs
            # start between two reads: the hint counts only the holders the next read cannot take
            # from the held ones (not the ones read this time, which it can).
            holders = len(runs) - len(kept)
        with self._lock:
            self._held, self.gpu_holders = kept, holders
            self.stats = QueueStats(detail_read=how.detail, detail_cached=how.cached)
        return read

    def _publish(self, stats: QueueStats) -> None:
        with self._lock:
            self.stats = stats

    def _read_details(self, read: QueueRead, threshold: int, how: _Progress) -> QueueRead:
        """GPU indexes for the holders still without: one read each when few, else the full read."""
        if not read.needs_detail:
            return read
        if len(read.needs_detail) > threshold:
            # Many jobs hold GPUs: one full detail read is cheaper than one read per job.
            how.detail = "full"
            return apply_details(read, self._full_details(), every_holding=True)
        if how.detail == "none":
            how.detail = "one-by-one"
        with ThreadPoolExecutor(max_workers=8) as pool:
            texts = list(pool.map(self._job_detail_text, read.needs_detail))
        details = parse_output(
            "scontrol show job -d -o ID", lambda: parse_scontrol_detail("\n".join(t for t in texts if t))
        )
        return apply_details(read, details)

    def _full_details(self, *, starts: bool = False) -> dict[str, JobDetail]:
        """Every job's detail: lines without a GPU index, AdminComment or restart are dropped as
        they arrive. ``starts``: with StartTimes, for a read that may predate squeue's
        (`apply_details`)."""

        def consume(lines: Iterable[str]) -> dict[str, JobDetail]:
            return parse_scontrol_detail("\n".join(line for line in lines if detail_wanted(line)), starts=starts)

        return self.runner.stream(
            ["scontrol", "show", "job", "-d", "-o"],
            lambda lines: parse_output("scontrol show job -d -o", lambda: consume(lines)),
        )

    def _job_detail_text(self, raw_id: str) -> str:
        try:
            return self.runner.run(["scontrol", "show", "job", "-d", "-o", raw_id], what=raw_id)
        except NotFound:
            return ""  # ended between the two reads

    def _read_pyslurm(self, class_key_of: Callable[[], ClassKey]) -> QueueRead | None:
        """Jobs through pyslurm when it matches the cluster's release (and no -M is asked for)."""
        if self.runner.cluster or self._pyslurm is False:
            return None
        if self._pyslurm is None and "pyslurm" not in sys.modules and importlib.util.find_spec("pyslurm") is None:
            self._pyslurm = False  # not installed: spare importing the reader
            return None
        from gpuq.backends.slurm.pyslurm_read import jobs_from_pyslurm, load_pyslurm

        if self._pyslurm is None:
            self._pyslurm = load_pyslurm(self._show_config().get("SLURM_VERSION", "")) or False
        module = self._pyslurm
        if module is False:
            return None
        try:
            loaded = module.Jobs.load()
        except Exception:  # noqa: BLE001 - any libslurm trouble: the CLI path still works
            self._pyslurm = False
            return None
        key = class_key_of()
        return parse_output("pyslurm.Jobs.load()", lambda: jobs_from_pyslurm(loaded.values(), key))


@dataclass(slots=True)
class _Progress:
    """What one read has done so far (published as `QueueStats` when it ends)."""

    detail: str = "none"
    cached: int = 0


def _use_held(held: dict[str, Held] | None, read: QueueRead, runs: dict[str, Run]) -> int:
    """Fill the holders whose run (StartTime, nodes, GPU count as squeue shows them) is the one
    ``held`` has indexes for; returns how many. A requeued job starts a new run (another
    StartTime); a resize (``scontrol update NumNodes=``) keeps StartTime but changes the nodes
    and the GPU count: either is read again."""
    if not held or not runs:
        return 0
    kept = {
        raw: JobDetail(allocation=dict(entry[3]), start=entry[0], suspension=entry[5])
        for raw, run in runs.items()
        if (entry := held.get(raw)) is not None and (entry[0], entry[1], entry[2], entry[4]) == run
    }
    before = len(read.needs_detail)
    apply_details(read, kept, same_run=True)
    return before - len(read.needs_detail)


def _holder_runs(read: QueueRead) -> dict[str, Run]:
    """The run of each holder still needing indexes, as squeue shows it: StartTime, nodes (sorted;
    the placeholder allocation's keys) and GPU count. A job without a StartTime or nodes is left
    out (never cached: read every time)."""
    need = set(read.needs_detail)
    if not need:
        return {}
    raw_ids = read.raw_ids
    out: dict[str, Run] = {}
    for job in read.jobs:
        raw = raw_ids[job.id]
        if raw in need and job.start_time is not None and job.allocation:
            out[raw] = (job.start_time.timestamp(), tuple(sorted(job.allocation)), job.gpus,
                        job.state is JobState.SUSPENDED)  # fmt: skip
    return out


def _held_after(read: QueueRead, runs: Mapping[str, Run]) -> dict[str, Held]:
    """What to keep for the next read: the indexes of this read's holders that got complete ones
    (every index known, on the job's own nodes), by the run squeue showed. Nothing else, so it
    holds the current holders only and does not grow."""
    if not runs:
        return {}
    missing = set(read.needs_detail)
    raw_ids = read.raw_ids
    out: dict[str, Held] = {}
    for job in read.jobs:
        raw = raw_ids[job.id]
        run = runs.get(raw)
        if run is None or raw in missing or not job.allocation:
            continue
        alloc: dict[str, tuple[int, ...]] = {}
        for node, idx in job.allocation.items():
            known = tuple(i for i in idx if i is not None)
            if not known or len(known) != len(idx) or node not in run[1]:
                break  # an unknown index, or a node squeue did not show: read it next time too
            alloc[node] = known
        else:
            out[raw] = (run[0], run[1], run[2], alloc, run[3], read.suspensions.get(job.id))
    return out
