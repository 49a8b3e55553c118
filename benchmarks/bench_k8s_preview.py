"""The kube-scheduler preview at Kubernetes' documented scale (measures; asserts nothing).

    python benchmarks/bench_k8s_preview.py [PODS] [NODES] [PDBS]    (default 150,000, 5,000, 500)

NODES GPU nodes of 8 GPUs (copies of the recorded ``gpu-node-1``) and PODS copies of the recorded
running pod (tests/fixtures/k8s/11-pod-running.json): one GPU each, 8 bound to each node until
the nodes are full, the rest pending; priorities 100 or 1000, starts a second apart, each pod's
``app`` label one of PDBS groups. The preemptor is a pending 8-GPU pod at priority 100000, so
every node is a candidate. Measured, median of 5 after a warm-up:

- `default_preemption` alone on prepared inputs, without PDBs and with PDBS budgets (each
  selecting one ``app`` group, disruptionsAllowed 0: every pod is under one, the worst case);
- `KubernetesBackend.native_preview`'s work (`NativePreview.plan`) on the cached wire objects:
  `warm()`, which the backend's `snapshot()` runs after each refresh (after a list it converts
  every pod to its PodInfo and matches it against the budgets), the first plan after it, the
  next ones, and for comparison a first plan without `warm()`.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuq.backends.kubernetes import wire as w  # noqa: E402
from gpuq.backends.kubernetes.client import KubeClient  # noqa: E402
from gpuq.backends.kubernetes.listwatch import Store, gc_paused  # noqa: E402
from gpuq.backends.kubernetes.native import NativePreview, node_info, pdb_info  # noqa: E402
from gpuq.backends.kubernetes.preemption import Preemptor, Toleration, default_preemption  # noqa: E402
from gpuq.backends.kubernetes.state import ClusterState  # noqa: E402
from gpuq.model import PreviewRequest  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "k8s"
GPUS_PER_NODE = 8


def build(pods: int, nodes: int, pdbs: int) -> tuple[list[w.Node], list[w.Pod], list[w.PodDisruptionBudget]]:
    node = next(n for n in json.loads((FIXTURES / "04-nodes.json").read_bytes())["items"]
                if n["metadata"]["name"] == "gpu-node-1")  # fmt: skip
    node_items = []
    for i in range(nodes):
        node["metadata"]["name"] = f"gpu-node-{i:05d}"
        node_items.append(json.dumps(node).encode())
    pod = json.loads((FIXTURES / "11-pod-running.json").read_bytes())
    one = {"nvidia.com/gpu": "1"}
    pod["spec"]["containers"][0]["resources"]["limits"].update(one)
    pod["spec"]["containers"][0]["resources"]["requests"].update(one)
    pod_items = []
    bound = nodes * GPUS_PER_NODE
    for i in range(pods):
        meta = pod["metadata"]
        meta.update(name=f"train-{i:06d}", uid=f"00000000-0000-0000-0002-{i:012d}", resourceVersion=str(1000 + i))
        meta["labels"] = {"app": f"group-{i % max(pdbs, 1)}", "job-name": f"train-{i // 8}"}
        pod["spec"]["priority"] = 100 if i % 3 else 1000
        pod["status"]["startTime"] = f"2026-11-29T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z"
        if i < bound:
            pod["spec"]["nodeName"] = f"gpu-node-{i // GPUS_PER_NODE:05d}"
            pod["status"]["phase"] = "Running"
        else:
            pod["spec"].pop("nodeName", None)
            pod["status"]["phase"] = "Pending"
        pod_items.append(json.dumps(pod).encode())
    budget_items = []
    for i in range(pdbs):
        budget = {"metadata": {"name": f"pdb-{i}", "namespace": "ml-team-a", "generation": 1},
                  "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": f"group-{i}"}}},
                  "status": {"observedGeneration": 1, "disruptionsAllowed": 0}}  # fmt: skip
        budget_items.append(json.dumps(budget).encode())

    def decode(items: list[bytes], kind: type) -> list:  # type: ignore[type-arg]
        return list(msgspec.json.decode(b'{"items":[' + b",".join(items) + b"]}", type=kind).items)

    budgets = decode(budget_items, w.PodDisruptionBudgetList)
    return decode(node_items, w.NodeList), decode(pod_items, w.PodList), budgets


def timed(fn: Callable[[], object], runs: int = 7) -> str:
    """Wall and CPU time of `fn`, ms: median (min) over `runs` after a warm-up. On a shared VM the
    wall clock also counts the time other processes hold the CPU; the process's CPU time does not."""
    fn()  # warm-up
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return (f"wall median {statistics.median(wall):.0f} ms (min {min(wall):.0f}), CPU median "
            f"{statistics.median(cpu):.0f} ms (min {min(cpu):.0f})")  # fmt: skip


def once(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU time of one call of `fn`, ms."""
    start, start_cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - start) * 1000, (time.process_time() - start_cpu) * 1000


def main() -> None:
    pods, nodes, pdbs = (int(a) for a in (sys.argv[1:] + ["150000", "5000", "500"][len(sys.argv) - 1 :])[:3])
    t0 = time.perf_counter()
    node_objs, pod_objs, pdb_objs = build(pods, nodes, pdbs)
    print(f"built {len(node_objs)} nodes, {len(pod_objs)} pods, {len(pdb_objs)} PDBs in "
          f"{time.perf_counter() - t0:.1f} s")  # fmt: skip

    state = ClusterState(KubeClient(), watch=False)
    state.store("nodes").replace(node_objs, "1")
    state.store("pods").replace(pod_objs, "1")
    state.store("priorityclasses").replace(
        msgspec.json.decode((FIXTURES / "15-priorityclasses.json").read_bytes(), type=w.PriorityClassList).items, "1"
    )
    native = NativePreview(state)
    native._minor, native._minor_read = None, True  # (no server to ask: the current rules)

    infos = native.pods(state.store("pods"))
    node_infos = [node_info(n) for n in node_objs]
    pdb_infos = [pdb_info(p) for p in pdb_objs]
    gpu = (Toleration("nvidia.com/gpu", "Exists"),)
    preemptor = Preemptor("ml-team-a/urgent", "ml-team-a", 100000, 8, tolerations=gpu)
    for label, budgets in (("no PDBs", []), (f"{pdbs} PDBs, every pod under one", pdb_infos)):
        figures = timed(lambda b=budgets: default_preemption(preemptor, node_infos, infos, b))  # type: ignore[misc]
        with gc_paused():
            paused = timed(lambda b=budgets: default_preemption(preemptor, node_infos, infos, b))  # type: ignore[misc]
        choice = default_preemption(preemptor, node_infos, infos, budgets)
        print(f"default_preemption alone, {label}: {figures}; the collector paused (as the preview runs it): "
              f"{paused}; {choice.outcome} on {choice.node}, {len(choice.victims)} victims")  # fmt: skip

    request = PreviewRequest(gpus=8, priority=100000)
    for label, wire_budgets in (("no PDBs", []), (f"{pdbs} PDBs", pdb_objs)):
        with state.lock:
            state.store("pdbs").replace(wire_budgets, "1")
        unwarmed = NativePreview(state)
        unwarmed._minor, unwarmed._minor_read = None, True
        cold, cold_cpu = once(lambda u=unwarmed: u.plan(request))  # type: ignore[misc]
        fresh = NativePreview(state)
        fresh._minor, fresh._minor_read = None, True
        warm, warm_cpu = once(fresh.warm)
        first, first_cpu = once(lambda f=fresh: f.plan(request))  # type: ignore[misc]
        figures = timed(lambda f=fresh: f.plan(request))  # type: ignore[misc]
        print(f"NativePreview, {label}: warm() after the list (as the backend's snapshot() calls it) wall "
              f"{warm:.0f} ms, CPU {warm_cpu:.0f} ms; the first plan() then wall {first:.0f} ms, CPU "
              f"{first_cpu:.0f} ms; later {figures}; a first plan() without warm() (it converts every "
              f"pod itself) wall {cold:.0f} ms, CPU {cold_cpu:.0f} ms")  # fmt: skip
        pods_store = state.store("pods")
        bound = [p for p in pod_objs if p.spec.node_name]

        def event_then_plan(f: NativePreview = fresh, bound: list[w.Pod] = bound,
                            pods_store: Store[w.Pod] = pods_store) -> None:  # fmt: skip
            # a MODIFIED event on a bound pod, applied as the informer applies it, then a preview
            old = bound[time.monotonic_ns() % len(bound)]
            new = msgspec.structs.replace(old, metadata=msgspec.structs.replace(
                old.metadata, resource_version=str(time.monotonic_ns())))  # fmt: skip
            with state.lock:
                pods_store.apply("MODIFIED", new)
                state._changed(pods_store, old, new)
            f.plan(request)

        print(f"NativePreview.plan, {label}, after a watch event each time: {timed(event_then_plan)}")


if __name__ == "__main__":
    main()
