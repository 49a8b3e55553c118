"""`group_rows`: an owner of two or more rows becomes a group line where its first pod was, with its
pods right after it; the group adds up its pods; unowned and lone pods stay plain rows."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuq.model import JobState
from gpuq.views.groups import GroupRow, group_rows, state_summary
from gpuq.views.queue import QueueRow, SlaStatus
from tests.factories import make_job
from tests.properties import examples

_R, _P = JobState.RUNNING, JobState.PENDING


def _row(id: str, owner: str | None, state: JobState = _R, gpus: int = 1, eff: float = 0.0,
         wait: float | None = None, sla: SlaStatus = SlaStatus.NONE, user: str = "u",
         preemptions: tuple[int, int] = (0, 0)) -> QueueRow:  # fmt: skip
    job = make_job(id, "n", user, "t", "normal", 1, state, 0.0, gpus, owner=owner)
    return QueueRow(job, wait, eff, preemptions[0], preemptions[1], sla, job.queued_since)


def _shape(items: list[QueueRow | GroupRow]) -> list[str]:
    return [f"[{i.owner}]" if isinstance(i, GroupRow) else i.job.id for i in items]


def test_a_group_takes_its_first_pods_place_and_its_pods_follow() -> None:
    rows = [_row("a/x-0", "Job/a/x"), _row("a/solo", None), _row("a/y-0", "Job/a/y"), _row("a/x-1", "Job/a/x"),
            _row("a/z-0", "JobSet/a/z"), _row("a/z-1", "JobSet/a/z"), _row("a/x-2", "Job/a/x")]  # fmt: skip
    items = group_rows(rows)
    assert _shape(items) == ["[Job/a/x]", "a/x-0", "a/x-1", "a/x-2", "a/solo", "a/y-0",
                             "[JobSet/a/z]", "a/z-0", "a/z-1"]  # fmt: skip
    group = items[0]
    assert isinstance(group, GroupRow)
    assert [r.job.id for r in group.rows] == ["a/x-0", "a/x-1", "a/x-2"] and group.pods == 3
    # a lone pod of an owner is not a group
    assert isinstance(items[5], QueueRow) and items[5].job.owner == "Job/a/y"


def test_the_group_adds_its_pods_up() -> None:
    rows = [
        _row("p0", "PyTorchJob/ml/t", _R, 8, eff=10.0, wait=30.0, sla=SlaStatus.OK, preemptions=(2, 1)),
        _row("p1", "PyTorchJob/ml/t", _P, 8, eff=55.5, wait=600.0, sla=SlaStatus.AT_RISK, user="v"),
        _row("p2", "PyTorchJob/ml/t", _R, 4, eff=20.0, wait=None, sla=SlaStatus.NONE, preemptions=(1, 0)),
    ]
    (group, *pods) = group_rows(rows)
    assert isinstance(group, GroupRow) and pods == rows
    assert (group.owner, group.gpus, group.states) == ("PyTorchJob/ml/t", 20, "2 running, 1 pending")
    assert (group.effective_priority, group.wait_s, group.sla) == (55.5, 600.0, SlaStatus.AT_RISK)
    assert (group.preemptions, group.preemptions_24h) == (3, 1)
    assert (group.user, group.tenant, group.job_class) == (None, "t", "normal")  # users differ


def test_no_waits_give_no_wait_and_a_breach_is_the_groups() -> None:
    rows = [_row("p0", "Job/a/j", sla=SlaStatus.OK), _row("p1", "Job/a/j", sla=SlaStatus.BREACH)]
    group = group_rows(rows)[0]
    assert isinstance(group, GroupRow) and group.wait_s is None and group.sla is SlaStatus.BREACH


def test_state_summary_orders_by_count_then_state() -> None:
    assert state_summary([_P, _R, _P]) == "2 pending, 1 running"
    assert state_summary([_R, _P]) == "1 pending, 1 running"  # a tie: JobState's order
    assert state_summary([JobState.COMPLETING]) == "1 completing"


def test_rows_without_owners_are_unchanged() -> None:
    rows = [_row(str(i), None) for i in range(5)]
    assert group_rows(rows) == rows


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from([None, "Job/a/x", "Job/a/y", "Job/b/x"]), max_size=20))
def test_every_row_appears_once_and_groups_hold_exactly_their_owners_pods(owners: list[str | None]) -> None:
    rows = [_row(str(i), owner) for i, owner in enumerate(owners)]
    items = group_rows(rows)
    plain = [i for i in items if isinstance(i, QueueRow)]
    assert sorted(r.job.id for r in plain) == sorted(r.job.id for r in rows)
    for n, item in enumerate(items):
        if isinstance(item, GroupRow):
            expected = [r for r in rows if r.job.owner == item.owner]
            assert len(expected) >= 2 and list(item.rows) == expected
            assert items[n + 1 : n + 1 + len(expected)] == expected
    lone = {o for o in owners if o is not None and owners.count(o) == 1}
    assert not any(isinstance(i, GroupRow) and i.owner in lone for i in items)
