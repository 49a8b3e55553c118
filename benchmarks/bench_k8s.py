"""Kubernetes backend at Kubernetes' documented scale (measures; asserts nothing).

    python benchmarks/bench_k8s.py [PODS] [NODES]        (default 150,000 pods, 5,000 nodes)

A stand-in API server runs in a separate process (so its memory and CPU are not the client's) and
serves, paginated as kube-apiserver does (``limit``/``continue``), NODES copies of the recorded
GPU node and PODS copies of the recorded running pod (tests/fixtures/k8s/11-pod-running.json,
``managedFields`` and all, compact JSON as the server sends it), names, uids and
resourceVersions varied: one GPU each, 8 bound to each node until the nodes are full, the rest
pending. The PriorityClasses, PDBs, Events and discovery are the recorded bodies. Then, in this
process:

- the first `KubernetesBackend.snapshot()` (discovery, every list page by page, the model):
  wall time and peak RSS (targets: <= 10 s, <= 1.5 GiB);
- watch events applied to the loaded model (decode, cache, the pod's job and its node's count):
  the time per event (target <= 1 ms), and the snapshot a console refresh then assembles;
- for scale, decoding one pod with msgspec alone.
"""

from __future__ import annotations

import json
import os
import resource
import select
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "k8s"
PAGE = 500
GPUS_PER_NODE = 8


def _compact(name: str) -> bytes:
    return json.dumps(json.loads((FIXTURES / name).read_bytes()), separators=(",", ":")).encode()


def build(pods: int, nodes: int) -> dict[str, list[bytes]]:
    """The pages of each collection, as the stand-in server sends them."""
    pod = json.loads((FIXTURES / "11-pod-running.json").read_bytes())
    node = next(n for n in json.loads((FIXTURES / "04-nodes.json").read_bytes())["items"]
                if n["metadata"]["name"] == "gpu-node-1")  # fmt: skip
    node_items = []
    for i in range(nodes):
        node["metadata"].update(name=f"gpu-node-{i:05d}", uid=f"00000000-0000-0000-0001-{i:012d}")
        node["metadata"]["labels"]["kubernetes.io/hostname"] = node["metadata"]["name"]
        node_items.append(json.dumps(node, separators=(",", ":")).encode())
    pod_items = []
    one = {"nvidia.com/gpu": "1"}
    pod["spec"]["containers"][0]["resources"]["limits"].update(one)
    pod["spec"]["containers"][0]["resources"]["requests"].update(one)
    bound = nodes * GPUS_PER_NODE
    for i in range(pods):
        meta = pod["metadata"]
        meta.update(name=f"train-{i:06d}", uid=f"00000000-0000-0000-0002-{i:012d}", resourceVersion=str(1000 + i))
        if i < bound:
            pod["spec"]["nodeName"] = f"gpu-node-{i // GPUS_PER_NODE:05d}"
            pod["status"]["phase"] = "Running"
        else:
            pod["spec"].pop("nodeName", None)
            pod["status"]["phase"] = "Pending"
        pod_items.append(json.dumps(pod, separators=(",", ":")).encode())

    def pages(kind: str, items: list[bytes]) -> list[bytes]:
        out = []
        for start in range(0, max(len(items), 1), PAGE):
            meta: dict[str, Any] = {"resourceVersion": "999999"}
            if start + PAGE < len(items):
                meta["continue"] = f"page-{start // PAGE + 1}"
                meta["remainingItemCount"] = len(items) - start - PAGE
            head = json.dumps({"kind": kind, "apiVersion": "v1", "metadata": meta}, separators=(",", ":"))
            out.append(head[:-1].encode() + b',"items":[' + b",".join(items[start : start + PAGE]) + b"]}")
        return out

    return {
        "/api/v1/pods": pages("PodList", pod_items),
        "/api/v1/nodes": pages("NodeList", node_items),
        "/apis/scheduling.k8s.io/v1/priorityclasses": [_compact("15-priorityclasses.json")],
        "/apis/policy/v1/poddisruptionbudgets": [_compact("16-pdbs.json")],
        "/api/v1/events": [_compact("17-events-reason-preempted.json")],
        "/apis": [_compact("02-apis-discovery.json")],
    }


def serve(pods: int, nodes: int, port_file: str) -> None:
    """The stand-in API server (a child process): pages, and watches that stay open and quiet."""
    collections = build(pods, nodes)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            parts = urlsplit(self.path)
            query = dict(parse_qsl(parts.query))
            found = collections.get(parts.path)
            if found is None:
                self._send(404, b"404 page not found\n", "text/plain; charset=utf-8")
            elif query.get("watch") == "1":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while not select.select([self.connection], [], [], 1.0)[0]:
                    pass  # (quiet until the client goes away)
                self.close_connection = True
            else:
                token = query.get("continue", "")
                at = int(token.split("-")[1]) if token else 0
                self._send(200, found[at], "application/json")

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    pods = int(sys.argv[1]) if len(sys.argv) > 1 else 150_000
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 5_000
    with tempfile.TemporaryDirectory() as tmp:
        port_file = Path(tmp) / "port"
        child = subprocess.Popen([sys.executable, __file__, "--serve", str(pods), str(nodes), str(port_file)])  # noqa: S603
        try:
            started = time.monotonic()
            while not port_file.exists() or not port_file.read_text():
                if child.poll() is not None or time.monotonic() - started > 600:
                    raise SystemExit("the stand-in server did not start")
                time.sleep(0.1)
            url = f"http://127.0.0.1:{port_file.read_text()}"
            kubeconfig = Path(tmp) / "kubeconfig"
            kubeconfig.write_text(json.dumps({
                "apiVersion": "v1", "kind": "Config", "current-context": "bench",
                "clusters": [{"name": "bench", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "u"}}],
            }))  # fmt: skip
            run(kubeconfig, pods, nodes)
        finally:
            child.kill()
            child.wait()


def run(kubeconfig: Path, pods: int, nodes: int) -> None:
    import msgspec

    from gpuq.backends.kubernetes import KubernetesBackend
    from gpuq.backends.kubernetes import wire as w

    sample = _compact("11-pod-running.json")
    decoder = msgspec.json.Decoder(w.Pod)
    t0 = time.perf_counter()
    for _ in range(20_000):
        decoder.decode(sample)
    per_pod_us = (time.perf_counter() - t0) / 20_000 * 1e6

    backend = KubernetesBackend(kubeconfig=str(kubeconfig), timeout_s=60.0, clock=time.time)
    before = _rss_mib()
    t0 = time.perf_counter()
    snap = backend.snapshot()
    first_s = time.perf_counter() - t0
    peak = _rss_mib()
    held = sum(1 for j in snap.jobs if j.holds_gpus)
    print(f"first snapshot: {len(snap.jobs):,} jobs ({held:,} holding GPUs), {len(snap.nodes):,} nodes, "
          f"{len(backend.client.requests)} requests: "
          f"{first_s:.2f} s; peak RSS {peak:.0f} MiB ({before:.0f} MiB before it)")  # fmt: skip

    # Watch events applied to the loaded model, as the watch thread applies them.
    informer = backend.state.informers["pods"]
    raw = json.loads(sample)
    raw["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1"
    raw["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    times = []
    for i in range(2_000):
        raw["metadata"].update(name=f"train-{i * 7:06d}", resourceVersion=str(2_000_000 + i))
        raw["metadata"]["annotations"]["gpuq.io/last-checkpoint"] = f"2026-11-29T18:{i % 60:02d}:00Z"
        raw["spec"]["nodeName"] = f"gpu-node-{(i * 7 // GPUS_PER_NODE) % nodes:05d}"
        line = msgspec.Raw(json.dumps(raw, separators=(",", ":")).encode())
        t0 = time.perf_counter()
        informer._apply("MODIFIED", line)
        times.append(time.perf_counter() - t0)
    times.sort()
    p99 = times[len(times) * 99 // 100]
    print(f"watch event applied: median {statistics.median(times) * 1e3:.3f} ms, p99 {p99 * 1e3:.3f} ms, "
          f"max {times[-1] * 1e3:.3f} ms ({len(times):,} MODIFIED events)")  # fmt: skip
    refresh = []
    for _ in range(3):
        t0 = time.perf_counter()
        backend.snapshot()
        refresh.append(time.perf_counter() - t0)
    print(f"later snapshot (from the watch cache, no request): median {statistics.median(refresh):.3f} s")
    print(f"decoding one recorded pod with msgspec: {per_pod_us:.1f} µs; peak RSS at the end {_rss_mib():.0f} MiB")
    backend.close()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        sys.path.insert(0, str(ROOT))
        os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
        main()
