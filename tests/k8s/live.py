"""The recorded cluster staged on a real API server, for the integration tests when
``GPUQ_TEST_KUBECONFIG`` names one (else they run against `tests.k8s.double.ApiDouble`).

There may be no scheduler, controller-manager or kubelet, so everything is written through the
API as those components would write it (as the recordings were made, tests/fixtures/k8s/README.md):
Nodes with GPU capacity and a Ready condition (status subresource), PriorityClasses, the pods
(``schedulerName`` no scheduler answers to, so a running scheduler leaves them alone), bound
through the ``binding`` subresource and their status patched as the kubelet would, the
terminating pod deleted gracefully (no kubelet confirms it, so it stays), PDBs with their status,
and the Events of both APIs. Every name carries the run's id (namespaces ``gpuq-it-<run>-…``,
nodes and classes ``gpuq-it-<run>-…``), every pod the label ``gpuq.io/test-run=<run>`` (the
backend reads only those), and `cleanup` deletes all of it.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuq.backends.kubernetes.client import KubeClient

__all__ = ["LiveCluster"]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "k8s"
RUN_LABEL = "gpuq.io/test-run"
_MERGE = "application/merge-patch+json"
_SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink",
                  "deletionTimestamp", "deletionGracePeriodSeconds")  # fmt: skip


def _items(name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())["items"]
    return items


class LiveCluster:
    """Stage (`stage`) and remove (`cleanup`) the recorded cluster; `ns`/`node`/`pc` map a
    recorded name to the staged one."""

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig
        self.run = secrets.token_hex(3)
        self.client = KubeClient(kubeconfig=kubeconfig, timeout_s=30.0)
        self.created: list[str] = []  # paths to DELETE, in reverse order

    # -- names
    def ns(self, recorded: str) -> str:
        return f"gpuq-it-{self.run}-{recorded}"

    def node(self, recorded: str) -> str:
        return f"gpuq-it-{self.run}-{recorded}"

    def pc(self, recorded: str) -> str:
        return recorded if recorded.startswith("system-") else f"gpuq-it-{self.run}-{recorded}"

    # -- requests
    def _send(self, method: str, path: str, body: Any = None, content_type: str | None = None,
              query: dict[str, str] | None = None) -> Any:  # fmt: skip
        response = self.client.request(method, path, query, body=body, content_type=content_type)
        return json.loads(response.body) if response.body else None

    def _create(self, path: str, body: dict[str, Any], name: str) -> None:
        self._send("POST", path, body)
        self.created.append(f"{path}/{name}")

    def _meta(self, obj: dict[str, Any], rename: Callable[[str], str] | None = None) -> dict[str, Any]:
        meta = {k: v for k, v in obj["metadata"].items() if k not in _SERVER_FIELDS}
        if rename is not None:
            meta["name"] = rename(meta["name"])
        if "namespace" in meta:
            meta["namespace"] = self.ns(meta["namespace"])
        meta.pop("ownerReferences", None)  # (the owners' uids differ here: grouping keeps the labels)
        return meta

    # -- staging
    def stage(self) -> None:
        for pc in _items("15-priorityclasses.json"):
            if pc["metadata"]["name"].startswith("system-"):
                continue
            policy = pc.get("preemptionPolicy", "PreemptLowerPriority")
            body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": self._meta(pc, self.pc),
                    "value": pc["value"], "preemptionPolicy": policy}  # fmt: skip
            self._create("/apis/scheduling.k8s.io/v1/priorityclasses", body, body["metadata"]["name"])
        for node in _items("04-nodes.json"):
            meta = self._meta(node, self.node)
            spec = {k: v for k, v in node["spec"].items() if k in ("unschedulable", "taints")}
            spec["taints"] = [t for t in spec.get("taints", []) if not t["key"].startswith("node.kubernetes.io/not-")]
            self._create(
                "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec}, meta["name"]
            )
            status = {k: node["status"][k] for k in ("capacity", "allocatable", "conditions")}
            self._send("PATCH", f"/api/v1/nodes/{meta['name']}/status", {"status": status}, _MERGE)
        namespaces = sorted({p["metadata"]["namespace"] for p in _items("05-pods-all.json")} - {"default"})
        for ns in namespaces:
            self._create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": self.ns(ns)}}, self.ns(ns))  # fmt: skip
        terminating = []
        for pod in _items("05-pods-all.json"):
            if pod["metadata"]["namespace"] == "default":
                continue
            meta = self._meta(pod)
            meta.setdefault("labels", {})[RUN_LABEL] = self.run
            spec = dict(pod["spec"])
            node = spec.pop("nodeName", None)
            spec.pop("priority", None)  # (set by admission from the class)
            spec["priorityClassName"] = self.pc(spec["priorityClassName"])
            spec["schedulerName"] = f"gpuq-it-{self.run}-no-scheduler"
            path = f"/api/v1/namespaces/{meta['namespace']}/pods"
            self._send("POST", path, {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
            if node:
                binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"]},
                           "target": {"apiVersion": "v1", "kind": "Node", "name": self.node(node)}}  # fmt: skip
                self._send("POST", f"{path}/{meta['name']}/binding", binding)
            status = dict(pod["status"])
            if status.get("nominatedNodeName"):
                status["nominatedNodeName"] = self.node(status["nominatedNodeName"])
            self._send("PATCH", f"{path}/{meta['name']}/status", {"status": status}, _MERGE)
            if pod["metadata"].get("deletionTimestamp"):
                terminating.append(f"{path}/{meta['name']}")
        for path in terminating:  # (no kubelet confirms: the pod stays, Terminating, holding its GPUs)
            self._send("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 30})
        for pdb in _items("16-pdbs.json"):
            meta = self._meta(pdb)
            path = f"/apis/policy/v1/namespaces/{meta['namespace']}/poddisruptionbudgets"
            self._send("POST", path, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta,
                                      "spec": pdb["spec"]})  # fmt: skip
        for event in _items("17-events-reason-preempted.json"):
            meta = self._meta(event)
            ns = meta["namespace"]
            if event.get("firstTimestamp"):
                involved = dict(event["involvedObject"], namespace=ns)
                involved.pop("uid", None)
                body = {**{k: v for k, v in event.items() if k not in ("metadata", "involvedObject")},
                        "metadata": meta, "involvedObject": involved}  # fmt: skip
                self._send("POST", f"/api/v1/namespaces/{ns}/events", body)
            else:  # (written through events.k8s.io/v1, as recorded: eventTime only)
                regarding = dict(event["involvedObject"], namespace=ns)
                regarding.pop("uid", None)
                related = dict(event["related"], namespace=self.ns(event["related"]["namespace"]))
                body = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta,
                        "eventTime": event["eventTime"], "reportingController": event["reportingComponent"],
                        "reportingInstance": event["reportingInstance"], "action": event["action"],
                        "reason": event["reason"], "type": event["type"], "regarding": regarding, "related": related,
                        "note": event["message"].replace("ml-team-a/", self.ns("ml-team-a") + "/")}  # fmt: skip
                self._send("POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", body)

    def replay_watch(self) -> None:
        """What recording 41 recorded, done here: a GPU pod created, annotated, bound, deleted."""
        ns = self.ns("ml-team-a")
        path = f"/api/v1/namespaces/{ns}/pods"
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "watch-demo", "namespace": ns, "labels": {RUN_LABEL: self.run}},
               "spec": {"schedulerName": f"gpuq-it-{self.run}-no-scheduler", "containers": [
                   {"name": "main", "image": "busybox",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}  # fmt: skip
        self._send("POST", path, pod)
        self._send(
            "PATCH",
            f"{path}/watch-demo",
            {"metadata": {"annotations": {"gpuq.io/last-checkpoint": "2026-11-29T17:40:00Z"}}},
            _MERGE,
        )
        self._send(
            "POST",
            f"{path}/watch-demo/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "watch-demo"},
                "target": {"kind": "Node", "name": self.node("gpu-node-3")},
            },
        )
        self._send("DELETE", path + "/watch-demo", query={"gracePeriodSeconds": "0"})

    def cleanup(self) -> None:
        for ns in ("ml-team-a", "ml-team-b"):
            self._quietly("DELETE", f"/api/v1/namespaces/{self.ns(ns)}")
        for path in reversed(self.created):
            if "/namespaces" not in path:
                self._quietly("DELETE", path)

    def _quietly(self, method: str, path: str) -> None:
        with contextlib.suppress(Exception):  # (cleanup goes on past what is already gone)
            self.client.request(method, path)
