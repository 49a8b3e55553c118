"""The API server double with the writes gpuq's actions make (`WritableDouble`), answered as the
recorded kube-apiserver answers them (tests/fixtures/k8s/README.md), on a store of the recorded
objects that the writes change:

- PATCH (merge patch, recordings 25/60; JSON patch with ``test`` operations, 26/69: a failed test
  or a path that does not apply is 422 with recording 61's body; strategic merge as a merge): 200
  with the object as stored, resourceVersion bumped. A ``metadata.resourceVersion`` in a merge patch
  that is not the current one is 409 Conflict (27). Pod label values are validated as the server
  does (422 in recording 36's shape).
- POST ``pods/NAME/eviction`` (policy/v1 Eviction): 201 with recording 37's body, the pod then
  terminating (deletionTimestamp now + its grace, recording 38); a bound pod a PodDisruptionBudget
  selects is refused with 429, in recording 39's words when the budget's status was computed and
  allows no disruption, 40's when it was never computed; a pending pod is evicted whatever its
  budgets say (46). A uid precondition that no longer holds is 409.
- DELETE a pod: the pod as last stored with deletionTimestamp (48); gone at once when unbound or
  with grace 0, else terminating (32). DELETE a PodDisruptionBudget: 200 with a Status Success
  (upstream's generic registry). The options come from the body when there is one, else from the
  query, as the API server reads them.
- POST a PodDisruptionBudget: 201 with the object (uid, resourceVersion, generation 1, a status
  never computed, as recording 16's infer-server-pdb); 409 AlreadyExists for a taken name.
- ``dryRun=All`` (query, or DeleteOptions.dryRun): the answer as above, nothing stored (64).
- GET of one object: the store's; 404 in recording 28's shape when it is not there.

A test reads what was sent in `bodies` (method, target, Content-Type, body) and the store in
`objects`. Besides the recorded lab it stages pods owned by a ReplicaSet (alone, and one of a
Deployment), shaped as the recorded pending pod, for the bump of a controller's pending pod.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from tests.k8s.double import FIXTURES, ApiDouble, Reply

__all__ = ["RS_POD", "WEB_POD", "WritableDouble"]

#: a pending pod of a ReplicaSet without a Deployment (the supported bump of a controller's pod)
RS_POD = "ml-team-a/serve-llm-6d5f8-x7k2p"
#: a pending pod of a Deployment's ReplicaSet (refused: a template change rolls out every replica)
WEB_POD = "ml-team-a/web-7c9d4-q2w3e"
_JSON = "application/json"
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LISTS = {
    "/api/v1/pods": "05-pods-all.json",
    "/apis/policy/v1/poddisruptionbudgets": "16-pdbs.json",
    "/apis/kueue.x-k8s.io/v1beta2/workloads": "56-kueue-workloads-all.json",
}
#: resource → (API group for messages, Kind)
_KINDS = {
    "pods": ("", "Pod"),
    "poddisruptionbudgets": ("policy", "PodDisruptionBudget"),
    "workloads": ("kueue.x-k8s.io", "Workload"),
    "replicasets": ("apps", "ReplicaSet"),
    "jobs": ("batch", "Job"),
}
_OBJECT = re.compile(r"^(/api/v1|/apis/[^/]+/[^/]+)/namespaces/([^/]+)/([^/]+)(?:/([^/]+))?(?:/([^/]+))?$")


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_bytes())


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class _PatchFailed(Exception):
    pass


def json_patch(target: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 (test, add, replace, remove): what gpuq sends."""
    doc = copy.deepcopy(target)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for part in parts[:-1]:
            if not isinstance(parent, dict) or part not in parent:
                raise _PatchFailed(op["path"])
            parent = parent[part]
        last = parts[-1]
        if not isinstance(parent, dict):
            raise _PatchFailed(op["path"])
        if op["op"] == "test":
            if parent.get(last) != op["value"]:
                raise _PatchFailed(op["path"])
        elif op["op"] == "add":
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "replace":
            if last not in parent:
                raise _PatchFailed(op["path"])
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            if parent.pop(last, _PatchFailed) is _PatchFailed:
                raise _PatchFailed(op["path"])
        else:
            raise _PatchFailed(op["op"])
    return doc


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for req in selector.get("matchExpressions") or []:
        value, op = labels.get(req["key"]), req["operator"]
        if (op == "In" and value not in req.get("values", [])) or (op == "NotIn" and value in req.get("values", [])):
            return False
        if (op == "Exists" and value is None) or (op == "DoesNotExist" and value is not None):
            return False
    return True


class WritableDouble(ApiDouble):
    """See the module docstring. `now` is the server's clock (deletion timestamps, creations)."""

    def __init__(self, *, kueue: bool = False, now: datetime | None = None) -> None:
        super().__init__(kueue=kueue)
        self.now = now or datetime(2026, 11, 29, 18, 30, tzinfo=UTC)
        #: list path → {object path → object}
        self.objects: dict[str, dict[str, dict[str, Any]]] = {}
        self._lists: dict[str, dict[str, Any]] = {}
        self._changed: set[str] = set()
        #: object path → changes another writer makes just before gpuq's next real write to it
        self._touches: dict[str, list[dict[str, Any]]] = {}
        files = {k: v for k, v in _LISTS.items() if kueue or "kueue" not in k}
        for path, file in files.items():
            doc = _load(file)
            self._lists[path] = doc
            self.objects[path] = {self._path_of(path, o): o for o in doc["items"]}
        self.version = max(int(d["metadata"]["resourceVersion"]) for d in self._lists.values())
        self._stage_owned_pods()

    # ------------------------------------------------------------------ the store
    @staticmethod
    def _path_of(collection: str, obj: dict[str, Any]) -> str:
        head, _, resource = collection.rpartition("/")
        meta = obj["metadata"]
        return f"{head}/namespaces/{meta['namespace']}/{resource}/{meta['name']}"

    def _object_at(self, path: str) -> tuple[str, str] | None:
        """(list path, object path) for an object or subresource path the store holds."""
        found = _OBJECT.match(urlsplit(path).path)
        if found is None or found.group(4) is None:
            return None
        base, _ns, resource = found.group(1), found.group(2), found.group(3)
        collection = f"{base}/{resource}"
        obj = f"{base}/namespaces/{found.group(2)}/{resource}/{found.group(4)}"
        return collection, obj

    def stored(self, path: str) -> dict[str, Any] | None:
        """The object at `path` as stored now (None: not there)."""
        found = self._object_at(path)
        return None if found is None else self.objects.get(found[0], {}).get(found[1])

    def put(self, path: str, obj: dict[str, Any]) -> None:
        collection, key = self._object_at(path) or ("", "")
        self.objects.setdefault(collection, {})[key] = obj
        self._changed.add(collection)

    def touch(self, path: str, change: dict[str, Any] | None = None, *, times: int = 1) -> None:
        """Before each of the next `times` real (not dry-run) writes to `path`, another writer
        changes the object (a merge patch `change`; none: only its resourceVersion moves, as a
        status update by a controller does)."""
        with self._lock:
            self._touches.setdefault(path, []).extend([change or {}] * times)

    def _bump(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        return obj

    def document(self, file: str) -> bytes:
        for path, name in _LISTS.items():
            if name == file and path in self._changed:
                doc = dict(self._lists[path])
                doc["metadata"] = {**doc["metadata"], "resourceVersion": str(self.version)}
                doc["items"] = list(self.objects[path].values())
                return json.dumps(doc, indent=2).encode()
        return super().document(file)

    def _stage_owned_pods(self) -> None:
        template = next(
            p for p in _load("05-pods-all.json")["items"] if p["metadata"]["name"] == "train-llama-70b-m9vtd"
        )
        rs_meta = {"namespace": "ml-team-a", "generation": 1, "creationTimestamp": "2026-11-29T17:00:00Z"}
        serve = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                 "metadata": {**rs_meta, "name": "serve-llm-6d5f8", "uid": "5e7e0000-0000-4000-8000-00000000a001",
                              "resourceVersion": "201", "labels": {"app": "serve-llm"}},
                 "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "serve-llm"}},
                          "template": {"metadata": {"labels": {"app": "serve-llm"}},
                                       "spec": {"priorityClassName": "gpuq-low",
                                                "containers": template["spec"]["containers"]}}}}  # fmt: skip
        web = copy.deepcopy(serve)
        web["metadata"].update(name="web-7c9d4", uid="5e7e0000-0000-4000-8000-00000000a002", resourceVersion="202",
                               ownerReferences=[{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                                 "uid": "5e7e0000-0000-4000-8000-00000000a003", "controller": True,
                                                 "blockOwnerDeletion": True}])  # fmt: skip
        for rs, pod_id, uid in ((serve, RS_POD, "5e7e0000-0000-4000-8000-00000000b001"),
                                (web, WEB_POD, "5e7e0000-0000-4000-8000-00000000b002")):  # fmt: skip
            self.objects.setdefault("/apis/apps/v1/replicasets", {})[
                self._path_of("/apis/apps/v1/replicasets", rs)] = rs  # fmt: skip
            pod = copy.deepcopy(template)
            ns, name = pod_id.split("/")
            pod["metadata"].update(name=name, uid=uid, labels={"app": rs["metadata"]["name"]},
                                   ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                     "name": rs["metadata"]["name"], "uid": rs["metadata"]["uid"],
                                                     "controller": True, "blockOwnerDeletion": True}])  # fmt: skip
            pod["spec"].update(priorityClassName="gpuq-low", priority=100)
            self.put(f"/api/v1/namespaces/{ns}/pods/{name}", pod)

    # ------------------------------------------------------------------ answering
    def answer(
        self, method: str, target: str, user: str, body: bytes = b"", content_type: str = ""
    ) -> Reply | Iterator[bytes] | Callable[[Callable[[], bool]], Iterator[bytes]]:
        override = self.overridden(method, target)
        if override is not None:
            return override
        parts = urlsplit(target)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        found = self._object_at(parts.path)
        if found is not None and found[0] not in self.objects:
            found = None  # (a resource the store does not hold: the recordings answer)
        if found is not None and query.get("watch") not in ("1", "true") and user == "admin":
            with self._lock:
                return self._write(method, parts.path, query, body, content_type, found)
        if found is None and method == "POST" and user == "admin" and parts.path.endswith("/poddisruptionbudgets"):
            with self._lock:
                return self._create_pdb(parts.path, query, body)
        return super().answer(method, target, user, body, content_type)

    def _write(self, method: str, path: str, query: dict[str, str], body: bytes, ctype: str,
               where: tuple[str, str]) -> Reply:  # fmt: skip
        collection, key = where
        sub = path[len(key) :].strip("/")
        obj = self.objects.get(collection, {}).get(key)
        resource = collection.rsplit("/", 1)[1]
        name = unquote(key.rsplit("/", 1)[1])
        if obj is None:
            return self._not_found(resource, name)
        if method == "GET" and not sub:
            return Reply(200, _JSON, json.dumps(obj, indent=2).encode())
        dry = query.get("dryRun") == "All" or (method == "DELETE" and b'"dryRun"' in body)
        touches = self._touches.get(key)
        if touches and not dry:
            obj = self._bump(merge_patch(obj, touches.pop(0)))
            self.objects[collection][key] = obj
            self._changed.add(collection)
        if method == "PATCH" and not sub:
            return self._patch(collection, key, obj, json.loads(body), ctype, dry)
        if method == "POST" and sub == "eviction" and resource == "pods":
            return self._evict(key, obj, json.loads(body), dry)
        if method == "DELETE" and not sub:
            options = json.loads(body) if body else {k: v for k, v in query.items()}
            if body:
                dry = options.get("dryRun") == ["All"]
            return self._delete(collection, key, obj, options, dry)
        return Reply(405, _JSON, _status(405, "MethodNotAllowed", f"{method} is not served here"))

    def _patch(self, collection: str, key: str, obj: dict[str, Any], patch: Any, ctype: str, dry: bool) -> Reply:
        resource = collection.rsplit("/", 1)[1]
        name = obj["metadata"]["name"]
        if ctype.startswith("application/json-patch+json"):
            try:
                new = json_patch(obj, patch)
            except _PatchFailed:
                return Reply(422, _JSON, (FIXTURES / "61-kueue-jsonpatch-stale-rv-test-422.json").read_bytes())
        else:
            wanted = (patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch, dict) else None
            if wanted is not None and wanted != obj["metadata"]["resourceVersion"]:
                return Reply(409, _JSON, _conflict(resource, name))
            new = merge_patch(obj, patch)
            new["metadata"]["resourceVersion"] = obj["metadata"]["resourceVersion"]
        if resource == "pods":
            for value in (new["metadata"].get("labels") or {}).values():
                if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
                    return Reply(422, _JSON, _invalid_label(name, value))
        if dry:
            return Reply(200, _JSON, json.dumps(new, indent=2).encode())
        if new != obj:
            self._bump(new)
        self.objects[collection][key] = new
        self._changed.add(collection)
        return Reply(200, _JSON, json.dumps(new, indent=2).encode())

    def _precondition_fails(self, obj: dict[str, Any], options: dict[str, Any]) -> Reply | None:
        uid = (options.get("preconditions") or {}).get("uid")
        if uid is not None and uid != obj["metadata"]["uid"]:
            message = (f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                       f"{obj['metadata']['uid']}")  # fmt: skip
            return Reply(409, _JSON, _status(409, "Conflict", message, name=obj["metadata"]["name"], kind="pods"))
        return None

    def _evict(self, key: str, pod: dict[str, Any], eviction: dict[str, Any], dry: bool) -> Reply:
        options = eviction.get("deleteOptions") or {}
        failed = self._precondition_fails(pod, options)
        if failed is not None:
            return failed
        meta = pod["metadata"]
        if pod["spec"].get("nodeName") and not meta.get("deletionTimestamp"):
            for pdb in self.objects["/apis/policy/v1/poddisruptionbudgets"].values():
                if pdb["metadata"]["namespace"] != meta["namespace"] or not _selects(
                    pdb["spec"].get("selector"), meta.get("labels") or {}
                ):
                    continue
                status = pdb.get("status") or {}
                if status.get("observedGeneration", 0) < pdb["metadata"].get("generation", 1):
                    doc = _load("40-eviction-429-pdb-not-processed.json")
                    doc["details"]["causes"][0]["message"] = (f"The disruption budget {pdb['metadata']['name']} is "
                                                              "still being processed by the server.")  # fmt: skip
                    return Reply(429, _JSON, json.dumps(doc, indent=2).encode())
                if status.get("disruptionsAllowed", 0) <= 0:
                    doc = _load("39-eviction-429-pdb-computed.json")
                    doc["details"]["causes"][0]["message"] = (
                        f"The disruption budget {pdb['metadata']['name']} needs {status.get('desiredHealthy', 0)} "
                        f"healthy pods and has {status.get('currentHealthy', 0)} currently")  # fmt: skip
                    return Reply(429, _JSON, json.dumps(doc, indent=2).encode())
        if not dry:
            self._terminate(key, pod, options.get("gracePeriodSeconds"))
        return Reply(201, _JSON, (FIXTURES / "37-eviction-201.json").read_bytes())

    def _terminate(self, key: str, pod: dict[str, Any], grace: int | None) -> dict[str, Any]:
        """Delete a pod as the API server does: at once when unbound or grace 0, else it stays
        terminating until a kubelet confirms (none runs here). Returns the pod as last stored."""
        new = copy.deepcopy(pod)
        if grace is None:
            grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
        if not pod["spec"].get("nodeName"):
            grace = 0
        new["metadata"]["deletionTimestamp"] = _stamp(self.now + timedelta(seconds=grace))
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        self._bump(new)
        if grace == 0:
            self.objects["/api/v1/pods"].pop(key, None)
        else:
            self.objects["/api/v1/pods"][key] = new
        self._changed.add("/api/v1/pods")
        return new

    def _delete(self, collection: str, key: str, obj: dict[str, Any], options: dict[str, Any], dry: bool) -> Reply:
        failed = self._precondition_fails(obj, options)
        if failed is not None:
            return failed
        resource = collection.rsplit("/", 1)[1]
        if resource == "pods":
            grace = options.get("gracePeriodSeconds")
            shown = copy.deepcopy(obj) if dry else self._terminate(key, obj, None if grace is None else int(grace))
            return Reply(200, _JSON, json.dumps(shown, indent=2).encode())
        if not dry:
            del self.objects[collection][key]
            self._changed.add(collection)
        group, _ = _KINDS.get(resource, ("", ""))
        details = {"name": obj["metadata"]["name"], "group": group, "kind": resource, "uid": obj["metadata"]["uid"]}
        doc = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
        return Reply(200, _JSON, json.dumps(doc, indent=2).encode())

    def _create_pdb(self, path: str, query: dict[str, str], body: bytes) -> Reply:
        pdb = json.loads(body)
        ns = path.split("/namespaces/", 1)[1].split("/", 1)[0]
        name = pdb["metadata"]["name"]
        key = f"{path}/{name}"
        collection = "/apis/policy/v1/poddisruptionbudgets"
        if key in self.objects[collection]:
            message = f'poddisruptionbudgets.policy "{name}" already exists'
            return Reply(409, _JSON, _status(409, "AlreadyExists", message, name=name, kind="poddisruptionbudgets",
                                             group="policy"))  # fmt: skip
        pdb["metadata"].update(namespace=ns, uid=f"5e7e0000-0000-4000-8000-{len(self.bodies):012d}", generation=1,
                               creationTimestamp=_stamp(self.now))  # fmt: skip
        pdb["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
        if query.get("dryRun") != "All":
            self._bump(pdb)
            self.objects[collection][key] = pdb
            self._changed.add(collection)
        return Reply(201, _JSON, json.dumps(pdb, indent=2).encode())

    def _not_found(self, resource: str, name: str) -> Reply:
        group, _ = _KINDS.get(resource, ("", ""))
        what = f"{resource}.{group}" if group else resource
        return Reply(404, _JSON, _status(404, "NotFound", f'{what} "{name}" not found', name=name, kind=resource,
                                         group=group))  # fmt: skip


def _status(code: int, reason: str, message: str, **details: str) -> bytes:
    doc: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": message, "reason": reason}  # fmt: skip
    if details:
        doc["details"] = {k: v for k, v in details.items() if v}
    doc["code"] = code
    return json.dumps(doc, indent=2).encode()


def _conflict(resource: str, name: str) -> bytes:
    """Recording 27's body for another object."""
    doc = _load("27-conflict-409.json")
    doc["message"] = (f'Operation cannot be fulfilled on {resource} "{name}": the object has been modified; please '
                      "apply your changes to the latest version and try again")  # fmt: skip
    doc["details"] = {"name": name, "kind": resource}
    return json.dumps(doc, indent=2).encode()


def _invalid_label(name: str, value: str) -> bytes:
    """Recording 36's body for another pod and value."""
    doc = _load("36-invalid-422-label.json")
    recorded = "team a queue!"
    text = json.dumps(doc).replace("finetune-bert-0", name).replace(recorded, value.replace('"', '\\"'))
    return json.dumps(json.loads(text), indent=2).encode()
