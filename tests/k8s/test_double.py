"""The API server double against the recordings: what it sends for a recorded request is the
recorded response, its own pagination reproduces the recorded pages, and what the server does
not serve it refuses as the server did."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.k8s.double import FIXTURES, ApiDouble, Recorded, continue_token, recordings


def _get(double: ApiDouble, target: str, token: str = "admin-token", method: str = "GET") -> tuple[int, str, bytes]:
    request = urllib.request.Request(double.url + target, method=method, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - our own 127.0.0.1 server
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


_GETS = [r for r in recordings() if r.method == "GET"]


@pytest.mark.parametrize("recorded", _GETS, ids=[r.file for r in _GETS])
def test_every_recorded_read_is_answered_as_recorded(recorded: Recorded) -> None:
    kueue = recorded in recordings(kueue=True)  # (each lab's recordings from that lab's double)
    viewer_role = recorded.file != "35b-viewer-pods-403-view-unaggregated.json"
    with ApiDouble(kueue=kueue, viewer_role=viewer_role) as double:
        token = "viewer-token" if recorded.user == "viewer" else "admin-token"
        status, ctype, body = _get(double, recorded.target, token)
    assert (status, ctype) == (recorded.status, recorded.content_type)
    assert body == (FIXTURES / recorded.file).read_bytes()


def test_every_recording_is_covered() -> None:
    """Every file in the fixtures is in an index, and every indexed file exists (byte copies of
    ../shared/k8s-recorded, names kept)."""
    indexed = {r.file for r in recordings()}
    bodies = {p.name for p in FIXTURES.iterdir() if p.suffix in (".json", ".jsonl", ".txt")} - {
        "index.json", "index-kueue.json"}  # fmt: skip
    assert indexed == bodies


def test_own_pages_match_the_recorded_pages(double: ApiDouble) -> None:
    """The double's pagination of the all-namespace list (05), narrowed to one namespace, gives
    the recorded pages 22 and 23 object for object, with the same continue token."""
    recorded1 = json.loads((FIXTURES / "22-pods-limit3-page1.json").read_bytes())
    recorded2 = json.loads((FIXTURES / "23-pods-limit3-page2.json").read_bytes())
    double.recorded.clear()  # (answer from the double's own pagination, not the recordings)
    _, _, first = _get(double, "/api/v1/namespaces/ml-team-a/pods?limit=3")
    page1 = json.loads(first)
    assert page1 == recorded1
    token = page1["metadata"]["continue"]
    _, _, second = _get(double, f"/api/v1/namespaces/ml-team-a/pods?limit=3&continue={token}")
    assert json.loads(second) == recorded2


def test_continue_token_has_the_servers_form() -> None:
    assert continue_token("271", "train-llama-70b-7x2kq") == (
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjcxLCJzdGFydCI6InRyYWluLWxsYW1hLTcwYi03eDJrcVx1MDAwMCJ9"
    )


def test_a_limit_past_the_end_is_the_whole_recorded_list(double: ApiDouble) -> None:
    _, _, body = _get(double, "/api/v1/pods?limit=500")
    assert body == (FIXTURES / "05-pods-all.json").read_bytes()


def test_unknown_routes_and_writes_get_the_servers_404(double: ApiDouble) -> None:
    not_found = (FIXTURES / "03-kueue-workloads-404.txt").read_bytes()
    for method, target in (("GET", "/apis/kueue.x-k8s.io/v1beta2/workloads"), ("GET", "/api/v1/secrets"),
                           ("PATCH", "/api/v1/namespaces/ml-team-a/pods/finetune-bert-0"),
                           ("DELETE", "/api/v1/namespaces/ml-team-b/pods/sweep-lr-h5jrc")):  # fmt: skip
        assert _get(double, target, method=method) == (404, "text/plain; charset=utf-8", not_found)


def test_no_token_is_unauthorized(double: ApiDouble) -> None:
    status, _, body = _get(double, "/api/v1/pods", token="wrong")
    assert status == 401 and json.loads(body)["reason"] == "Unauthorized"


def test_watch_streams_fed_lines_chunked_one_event_a_line(double: ApiDouble, tmp_path: Path) -> None:
    lines = (FIXTURES / "41-watch-pods.jsonl").read_bytes().splitlines(keepends=True)
    double.feed("/api/v1/pods", *lines)
    double.end_watch("/api/v1/pods")
    status, ctype, body = _get(double, "/api/v1/pods?watch=1&resourceVersion=271&allowWatchBookmarks=true")
    assert (status, ctype) == (200, "application/json")
    assert body == b"".join(lines)
