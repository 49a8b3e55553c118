"""List + watch: pages, events applied by resourceVersion, and exactly one clean re-list for each
of the recorded 410 forms; a watch that ends is reopened where it stopped."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from gpuq.backends.kubernetes import KubernetesBackend
from gpuq.backends.kubernetes.client import ApiError, Expired
from gpuq.errors import Unreachable
from gpuq.model import JobState
from tests.k8s.conftest import WAIT_S, Target, eventually
from tests.k8s.double import FIXTURES, WATCH_TOO_OLD

PODS = "/api/v1/pods"
LINES = (FIXTURES / "41-watch-pods.jsonl").read_bytes().splitlines()
ALICE = (FIXTURES / "45-watch-after-compaction-oldrv.jsonl").read_bytes().splitlines()
DEMO = "ml-team-a/watch-demo"


def _query(target: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(target).query).items()}


def _lists(target: Target) -> list[str]:
    assert target.double is not None
    return target.double.requests("GET", PODS, watch=False)


def _watches(target: Target) -> list[dict[str, str]]:
    assert target.double is not None
    return [_query(t) for t in target.double.requests("GET", PODS, watch=True)]


def _applied(backend: KubernetesBackend, events: int) -> None:
    informer = backend.state.informers["pods"]
    assert informer.wait(lambda: informer.events >= events, WAIT_S), (informer.events, informer.error)


# ------------------------------------------------------------------ pages
def test_pages_read_every_pod_once(target: Target) -> None:
    whole = {j.id: j for j in target.snapshot(watch=False).jobs}
    paged = target.backend(page_size=3, watch=False)
    jobs = {j.id: j for j in paged.snapshot().jobs}
    assert jobs == whole and len(jobs) == 12
    requests = [_query(t) for t in _lists(target)][1:]  # (after the unpaged list)
    assert [q.get("limit") for q in requests] == ["3"] * 5  # 13 pods (one without GPUs), 3 a page
    assert "continue" not in requests[0] and all("continue" in q for q in requests[1:])


def test_an_expired_continue_token_lists_again_once(target: Target) -> None:
    assert target.double is not None
    target.double.reply("GET", PODS, "44-continue-expired-410.json", when="continue")
    backend = target.backend(page_size=5, watch=False)
    snap = backend.snapshot()
    assert len(snap.jobs) == 12
    pages = [("continue" in _query(t)) for t in _lists(target)]
    assert pages == [False, True, False, True, True]  # page 2 expired: from the start, once
    assert backend.state.informers["pods"].relists == 1


def test_a_second_expired_continue_token_is_an_error(target: Target) -> None:
    assert target.double is not None
    target.double.reply("GET", PODS, "44-continue-expired-410.json", when="continue", times=2)
    with pytest.raises(Expired, match="continue parameter is too old"):
        target.backend(page_size=5, watch=False).snapshot()


# ------------------------------------------------------------------ watch
def test_watch_applies_added_modified_deleted(target: Target) -> None:
    """Recording 41 line by line: a GPU pod created, annotated, bound, being deleted, deleted."""
    assert target.double is not None
    backend = target.backend()
    assert backend.snapshot().job(DEMO) is None
    steps = []
    for n, line in enumerate(LINES, 1):
        target.double.feed(PODS, line)
        _applied(backend, n)
        snap = backend.snapshot()
        job = snap.job(DEMO)
        steps.append(None if job is None else (job.state, job.nodes, job.last_checkpoint_time is not None))
        if n == 3:  # bound to gpu-node-3, already full: shown, and marked as a placement that cannot last
            assert snap.used_gpus()["gpu-node-3"] == 9 and job is not None and job.conflict
    assert steps == [
        (JobState.PENDING, (), False),  # ADDED
        (JobState.PENDING, (), True),  # MODIFIED: the checkpoint annotation
        (JobState.RUNNING, ("gpu-node-3",), True),  # MODIFIED: bound
        (JobState.COMPLETING, ("gpu-node-3",), True),  # MODIFIED: deletionTimestamp, still holds its GPU
        None,  # DELETED
    ]
    assert backend.snapshot().used_gpus()["gpu-node-3"] == 8
    assert len(_lists(target)) == 1  # one list, then only the watch
    assert _watches(target)[0]["resourceVersion"] == "271"  # from the list's resourceVersion
    assert backend.state.store("pods").resource_version == "285"


def test_watch_events_reach_the_model(cluster: Target) -> None:
    """The same changes on the cluster (fed on the double, made on a real server)."""
    backend = cluster.backend()
    backend.snapshot()
    seen: list[bool] = []
    informer = backend.state.informers["pods"]
    demo = cluster.id(DEMO)

    def gone_after_seen() -> bool:
        seen.append(demo in informer.store.items)
        return any(seen) and demo not in informer.store.items or informer.events >= len(LINES)

    cluster.replay_watch()
    assert informer.wait(gone_after_seen, WAIT_S)
    assert backend.snapshot().job(demo) is None
    assert informer.lists == 1 and informer.relists == 0


def test_an_error_event_410_in_the_stream_lists_again_once(target: Target) -> None:
    assert target.double is not None
    backend = target.backend()
    backend.snapshot()
    informer = backend.state.informers["pods"]
    target.double.feed(PODS, WATCH_TOO_OLD)  # HTTP 200, {"type":"ERROR", … "code":410}
    assert informer.wait(lambda: informer.lists == 2, WAIT_S)
    target.double.feed(PODS, LINES[0])  # the watch goes on from the new list
    _applied(backend, 1)
    assert backend.snapshot().job(DEMO) is not None
    assert (informer.lists, informer.relists, len(_lists(target))) == (2, 1, 2)
    assert informer.error is None


def test_http_410_on_a_watch_lists_again_once(target: Target) -> None:
    assert target.double is not None
    backend = target.backend()
    backend.snapshot()
    informer = backend.state.informers["pods"]
    target.double.reply("GET", PODS, "43-list-exact-compacted-410.json", when="watch")
    target.double.end_watch(PODS)  # (the open watch ends; the next one is answered 410)
    assert informer.wait(lambda: informer.lists == 2, WAIT_S)
    target.double.feed(PODS, LINES[0])
    _applied(backend, 1)
    assert (informer.lists, informer.relists, len(_lists(target))) == (2, 1, 2)


def test_a_watch_that_ends_is_reopened_where_it_stopped(target: Target) -> None:
    """The server ends a watch after its timeoutSeconds: gpuq watches again from the last
    resourceVersion it saw (an event's or a BOOKMARK's), without listing."""
    assert target.double is not None
    backend = target.backend(watch_timeout_s=7)
    backend.snapshot()
    target.double.feed(PODS, ALICE[0])  # MODIFIED notebook-alice, resourceVersion 286
    _applied(backend, 1)
    target.double.end_watch(PODS)
    bookmark = b'{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"290"}}}'
    target.double.feed(PODS, bookmark)
    informer = backend.state.informers["pods"]
    reached = informer.wait(lambda: informer.store.resource_version == "290", WAIT_S)
    assert reached, (informer.error, informer.store.resource_version)
    target.double.end_watch(PODS)
    assert eventually(lambda: len(_watches(target)) == 3)  # (a request alone changes nothing to wait on)
    watches = _watches(target)
    assert [w["resourceVersion"] for w in watches] == ["271", "286", "290"]
    assert all(w["allowWatchBookmarks"] == "true" and w["timeoutSeconds"] == "7" for w in watches)
    assert len(_lists(target)) == 1 and informer.relists == 0


def test_a_failed_watch_is_listed_again_at_the_next_snapshot(target: Target) -> None:
    assert target.double is not None
    backend = target.backend()
    backend.snapshot()
    informer = backend.state.informers["pods"]
    target.double.reply("GET", PODS, status=500, body=b'{"kind":"Status","code":500,"message":"etcd timeout"}',
                        when="watch")  # fmt: skip
    target.double.end_watch(PODS)
    assert informer.wait(lambda: informer.error is not None, WAIT_S)
    assert isinstance(informer.error, ApiError) and "etcd timeout" in str(informer.error)
    backend.snapshot()  # recovery: a clean list, and the watch again
    assert informer.lists == 2 and informer.error is None and informer.running


def test_a_server_lost_mid_session_is_unreachable_at_the_next_snapshot(target: Target) -> None:
    assert target.double is not None
    backend = target.backend()
    assert backend.snapshot().jobs
    informer = backend.state.informers["pods"]
    target.double.close()
    assert informer.wait(lambda: informer.error is not None, WAIT_S)
    with pytest.raises(Unreachable, match=target.double.url):
        backend.snapshot()


def test_without_watch_every_snapshot_lists(target: Target) -> None:
    backend = target.backend(watch=False)
    backend.snapshot()
    backend.snapshot()
    assert len(_lists(target)) == 2 and not _watches(target)
    assert not backend.state.informers["pods"].running


def test_a_continue_token_given_again_ends_the_list(target: Target) -> None:
    """A server that hands out the same continue token again would be paged for ever (646
    requests in 30 s, items piling up): the list stops at the repeat, naming the resource."""
    assert target.double is not None
    # (every page after the first answers with a recorded page whose continue token never changes)
    target.double.reply("GET", PODS, "22-pods-limit3-page1.json", when="continue", times=50)
    with pytest.raises(ApiError, match=r"list pods: the server gave page \d+'s continue token before"):
        target.backend(page_size=5, watch=False).snapshot()
    assert len(_lists(target)) <= 4


def test_a_list_of_more_pages_than_the_bound_is_refused(target: Target, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuq.backends.kubernetes import listwatch

    monkeypatch.setattr(listwatch, "MAX_PAGES", 3)
    with pytest.raises(ApiError, match=r"list pods: more than 3 pages; narrow it"):
        target.backend(page_size=2, watch=False).snapshot()
    assert len(_lists(target)) <= 4


def test_a_list_body_nested_too_deep_is_an_unexpected_answer(target: Target) -> None:
    """msgspec refuses a value nested past its depth limit with RecursionError, even in a field
    gpuq ignores: the list says the answer was unexpected, as for any other bad body."""
    assert target.double is not None
    deep = b'{"kind":"PodList","apiVersion":"v1","metadata":{},"x":' + b"[" * 5000 + b"]" * 5000 + b',"items":[]}'
    target.double.reply("GET", PODS, status=200, body=deep, times=2)
    with pytest.raises(ApiError, match=r"list pods: unexpected answer \(nested too deep\)"):
        target.backend(watch=False).snapshot()
