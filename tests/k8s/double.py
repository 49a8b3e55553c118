"""A kube-apiserver double for the test suite, built from the recorded responses.

`ApiDouble` listens on 127.0.0.1 (port 0) in a thread (`http.server.ThreadingHTTPServer`) and
answers every request gpuq's Kubernetes backend makes the way the recorded server did
(tests/fixtures/k8s/README.md, index.json):

- a request recorded exactly (method, path and query) gets the recorded body, status and
  Content-Type, byte for byte (`test_double.py` checks every one);
- a list the recordings hold in full is paginated for ``limit``/``continue`` as the server does
  (continue tokens of the same form, ``remainingItemCount``; a limit past the end is the whole
  recorded body), a namespaced list is the all-namespace one's objects of that namespace;
- ``watch=1`` streams the lines a test feeds (`feed`), chunked, one event a line, as the server
  does; the recorded 410 forms are at hand (`WATCH_TOO_OLD`: HTTP 200 with an ERROR line;
  `reply` with 43/44: HTTP 410);
- anything else gets the server's own answer for a path it does not serve: the plain-text
  ``404 page not found`` (recording 03). Writes (POST/PUT/PATCH/DELETE) are not served at all, so
  a read that writes fails loudly; `tests.k8s.writes.WritableDouble` serves the writes of actions.

Bearer tokens as the recorded lab's: ``admin-token`` (admin), ``viewer-token`` (viewer); the
viewer's requests are answered from the viewer's recordings only.
"""

from __future__ import annotations

import base64
import json
import queue
import select
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "k8s"
TLS = FIXTURES.parent / "tls"
TOKENS = {"admin-token": "admin", "viewer-token": "viewer"}
#: the recorded watch ERROR line for a resourceVersion outside the watch window (HTTP 200)
WATCH_TOO_OLD = (FIXTURES / "42-watch-rv1-too-old.jsonl").read_bytes()
_UNAUTHORIZED = (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized",'
                 b'"reason":"Unauthorized","code":401}\n')  # fmt: skip
_END = object()


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    content_type: str
    body: bytes
    file: str = ""


@dataclass(frozen=True, slots=True)
class Recorded:
    file: str
    method: str
    target: str
    status: int
    content_type: str
    user: str

    @property
    def reply(self) -> Reply:
        return Reply(self.status, self.content_type, (FIXTURES / self.file).read_bytes(), self.file)


def recordings(*, kueue: bool | None = None) -> list[Recorded]:
    """Every recorded request (both index files; `kueue`: only the lab with Kueue's CRDs, or
    only the one without), the Content-Type as the server sent it."""
    out = []
    for index in {None: ("index.json", "index-kueue.json"), True: ("index-kueue.json",),
                  False: ("index.json",)}[kueue]:  # fmt: skip
        for e in json.loads((FIXTURES / index).read_text()):
            ctype = e["content_type"].split(" (", 1)[0]
            out.append(Recorded(e["file"], e["method"], e["path"], e["status"], ctype, e.get("user") or "admin"))
    return out


def _key(method: str, target: str) -> tuple[str, str, frozenset[tuple[str, str]]]:
    parts = urlsplit(target)
    return method, parts.path, frozenset(parse_qsl(parts.query, keep_blank_values=True))


def continue_token(resource_version: str, start: str) -> str:
    """A continue token as the apiserver writes it (base64url, no padding, of its JSON)."""
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": int(resource_version), "start": start + "\x00"},
                     separators=(",", ":")).encode()  # fmt: skip
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _start_of(token: str) -> tuple[str, str] | None:
    try:
        doc = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return str(doc["rv"]), str(doc["start"]).rstrip("\x00")
    except (ValueError, KeyError, TypeError):
        return None


@dataclass
class _Watch:
    """What the watch streams of one collection path send: lines fed by the test, or an end."""

    lines: queue.Queue[Any] = field(default_factory=queue.Queue)
    opened: int = 0


class ApiDouble:
    """See the module docstring. Use as a context manager; `url` is the server's address."""

    def __init__(self, *, kueue: bool = False, viewer_role: bool = True, tls: bool = False,
                 tls_dir: Path | None = None) -> None:  # fmt: skip
        """`tls`: serve HTTPS with the committed self-signed certificate (tests/fixtures/tls), as
        a lab cluster does, reached with ``insecure-skip-tls-verify``. `tls_dir`: serve HTTPS with
        a certificate made there (`self_signed`) whose CA the kubeconfig carries, as a real API
        server does (the process-exit crashes of issue 32 happened inside OpenSSL)."""
        # Requests recorded twice, in two states of the lab: the scenario picks one.
        left_out = {
            "50-apis-discovery-with-kueue.json" if not kueue else "02-apis-discovery.json",
            *(("03-kueue-workloads-404.txt",) if kueue else ()),
            "35b-viewer-pods-403-view-unaggregated.json" if viewer_role else "35c-viewer-pods-ok-with-role.json",
        }
        #: the recorded GETs served as recorded (writes are not served: a read must not write)
        # (the lab with Kueue also answers what the first lab recorded, Kueue's 404 excepted)
        served = recordings() if kueue else recordings(kueue=False)
        self.recorded = {(_key(r.method, r.target), r.user): r for r in served
                         if r.method == "GET" and r.file not in left_out}  # fmt: skip
        self.kueue = kueue
        #: full collections by path (pagination, namespaced views): the recorded unpaged lists
        self.collections: dict[str, str] = {
            "/api/v1/pods": "05-pods-all.json",
            "/api/v1/nodes": "04-nodes.json",
            "/apis/scheduling.k8s.io/v1/priorityclasses": "15-priorityclasses.json",
            "/apis/policy/v1/poddisruptionbudgets": "16-pdbs.json",
        }
        self.selected: dict[tuple[str, frozenset[tuple[str, str]]], str] = {
            ("/api/v1/events", frozenset({("fieldSelector", "reason=Preempted")})): "17-events-reason-preempted.json",
            (
                "/api/v1/pods",
                frozenset({("labelSelector", "kueue.x-k8s.io/queue-name=team-a-queue")}),
            ): "06-pods-label-queue.json",
            (
                "/api/v1/pods",
                frozenset({("labelSelector", "kueue.x-k8s.io/queue-name in (team-b-queue,team-b-batch)")}),
            ): "07-pods-label-setbased.json",
        }
        if kueue:
            self.collections.update({
                "/apis/kueue.x-k8s.io/v1beta2/workloads": "56-kueue-workloads-all.json",
                "/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses": "53-kueue-workloadpriorityclasses.json",
                "/apis/kueue.x-k8s.io/v1beta2/clusterqueues": "54-kueue-clusterqueues.json",
                "/apis/kueue.x-k8s.io/v1beta2/localqueues": "55-kueue-localqueues-all.json",
            })  # fmt: skip
        #: per-test answers by (method, path), for any query: a 403, a 410, a server error
        self.overrides: dict[tuple[str, str], list[tuple[Reply, str | None, str | None]]] = {}
        self.watches: dict[str, _Watch] = {}
        #: every request: (method, target, user)
        self.log: list[tuple[str, str, str]] = []
        #: every request with a body: (method, target, Content-Type, body)
        self.bodies: list[tuple[str, str, str, bytes]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        #: HTTPS with a self-signed certificate (tests/fixtures/tls), as a lab cluster's
        self.tls = tls
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(TLS / "selfsigned-cert.pem", TLS / "selfsigned-key.pem")
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True,
                                                      do_handshake_on_connect=False)  # fmt: skip
        self._server.daemon_threads = True
        self.ca: Path | None = None
        if tls_dir is not None:
            cert, key = self_signed(tls_dir)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            # (the handshake is done in the handler's thread, not in accept: a client that never
            # sends one stalls only its own connection)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True,
                                                      do_handshake_on_connect=False)  # fmt: skip
            self.ca = cert
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="k8s-double", daemon=True)

    # ------------------------------------------------------------------ control
    def __enter__(self) -> ApiDouble:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stopping.set()
        for watch in list(self.watches.values()):
            watch.lines.put(_END)
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{'https' if self.ca or self.tls else 'http'}://{host}:{port}"

    def kubeconfig(self, path: Path, token: str = "admin-token", context: str = "lab") -> Path:
        """A kubeconfig naming this server (JSON is YAML); over TLS, one that skips verifying
        the self-signed certificate (``insecure-skip-tls-verify``)."""
        cluster: dict[str, Any] = {"server": self.url}
        if self.tls:
            cluster["insecure-skip-tls-verify"] = True
        doc = {
            "apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": "lab", "cluster": {**cluster, **self._ca_data()}}],
            "users": [{"name": "u", "user": {"token": token}}],
            "contexts": [{"name": context, "context": {"cluster": "lab", "user": "u"}}],
        }  # fmt: skip
        path.write_text(json.dumps(doc))
        return path

    def _ca_data(self) -> dict[str, str]:
        if self.ca is None:
            return {}
        return {"certificate-authority-data": base64.b64encode(self.ca.read_bytes()).decode()}

    def reply(self, method: str, path: str, file: str | None = None, *, times: int = 1,
              status: int | None = None, body: bytes | None = None, when: str | None = None,
              unless: str | None = None) -> None:  # fmt: skip
        """Answer the next `times` requests for `path` (any query; `when`: only those whose
        query has that parameter, `unless`: only those whose query has not) with a recording
        (`file`'s body, status and Content-Type) or the given status and body."""
        if file is not None:
            found = next(r for r in recordings() if r.file == file)
            answer = found.reply
        else:
            assert status is not None and body is not None
            answer = Reply(status, "application/json", body)
        with self._lock:
            self.overrides.setdefault((method, path), []).extend([(answer, when, unless)] * times)

    def feed(self, path: str, *lines: bytes) -> None:
        """Lines the next watch stream(s) of `path` send, in order."""
        watch = self._watch(path)
        for line in lines:
            watch.lines.put(line if line.endswith(b"\n") else line + b"\n")

    def end_watch(self, path: str) -> None:
        """End the watch stream of `path` that reads next (as the server's timeoutSeconds does)."""
        self._watch(path).lines.put(_END)

    def requests(self, method: str = "GET", path: str | None = None, *, watch: bool | None = None) -> list[str]:
        """Targets requested, filtered by method, path and whether they watched."""
        out = []
        for m, target, _user in list(self.log):
            parts = urlsplit(target)
            is_watch = ("watch", "1") in parse_qsl(parts.query)
            if m == method and (path is None or parts.path == path) and (watch is None or watch == is_watch):
                out.append(target)
        return out

    def _watch(self, path: str) -> _Watch:
        with self._lock:
            return self.watches.setdefault(path, _Watch())

    # ------------------------------------------------------------------ answering
    def overridden(self, method: str, target: str) -> Reply | None:
        """The next answer a test set for this request (`reply`), taken; None when there is none."""
        parts = urlsplit(target)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        with self._lock:
            waiting = self.overrides.get((method, parts.path), [])
            for at, (reply, when, unless) in enumerate(waiting):
                if (when is None or when in query) and (unless is None or unless not in query):
                    del waiting[at]
                    return reply
        return None

    def answer(
        self, method: str, target: str, user: str, body: bytes = b"", content_type: str = ""
    ) -> Reply | Iterator[bytes] | Callable[[Callable[[], bool]], Iterator[bytes]]:
        """The reply to one request (or the lines of a watch stream); `body` and `content_type`
        are the request's (what a double that serves writes reads)."""
        parts = urlsplit(target)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        override = self.overridden(method, target)
        if override is not None:
            return override
        recorded = self.recorded.get((_key(method, target), user))
        if recorded is not None:
            if recorded.file.endswith(".jsonl"):
                return iter((FIXTURES / recorded.file).read_bytes().splitlines(keepends=True))
            return recorded.reply
        if method != "GET" or user != "admin":
            return _not_served()
        if query.get("watch") in ("1", "true"):
            if self._collection(parts.path, query) is None:
                return _not_served()
            return self._stream(parts.path)
        return self._list(parts.path, query) or _not_served()

    def _collection(self, path: str, query: dict[str, str]) -> tuple[str, str | None] | None:
        """(recording of the full collection, namespace to keep or None)."""
        rest = {k: v for k, v in query.items() if k not in ("limit", "continue", "watch", "resourceVersion",
                                                             "allowWatchBookmarks", "timeoutSeconds")}  # fmt: skip
        whole, namespace = path, None
        segments = path.split("/")
        if "namespaces" in segments and segments.index("namespaces") + 2 < len(segments):
            at = segments.index("namespaces")
            whole, namespace = "/".join(segments[:at] + segments[at + 2 :]), segments[at + 1]
        if rest:  # (a selector: answered only where the recordings hold that selection)
            selected = self.selected.get((whole, frozenset(rest.items())))
            return None if selected is None else (selected, namespace)
        return (self.collections[whole], namespace) if whole in self.collections else None

    def _list(self, path: str, query: dict[str, str]) -> Reply | None:
        found = self._collection(path, query)
        if found is None:
            return None
        file, namespace = found
        raw = self.document(file)
        doc = json.loads(raw)
        items = [i for i in doc["items"] if namespace is None or i["metadata"].get("namespace") == namespace]
        rv = doc["metadata"]["resourceVersion"]

        def key(item: dict[str, Any]) -> str:
            meta = item["metadata"]
            return (
                meta["name"]
                if namespace is not None or not meta.get("namespace")
                else f"{meta['namespace']}/{meta['name']}"
            )

        start = 0
        token = query.get("continue")
        if token:
            where = _start_of(token)
            if where is None:
                return Reply(400, "application/json", _status(400, "BadRequest", "continue key is not valid"))
            rv, after = where
            start = next((i for i, item in enumerate(items) if key(item) > after), len(items))
        limit = int(query.get("limit", "0") or 0)
        if not token and namespace is None and (limit <= 0 or limit >= len(items)):
            return Reply(200, "application/json", raw, file)  # (the whole recorded body)
        page = items[start : start + limit] if limit > 0 else items[start:]
        meta: dict[str, Any] = {"resourceVersion": rv}
        left = len(items) - start - len(page)
        if left > 0:
            meta["continue"] = continue_token(rv, key(page[-1]))
            meta["remainingItemCount"] = left
        body = {"kind": doc["kind"], "apiVersion": doc["apiVersion"], "metadata": meta, "items": page}
        return Reply(200, "application/json", json.dumps(body, indent=2).encode())

    def document(self, file: str) -> bytes:
        """The body of a recorded list (a double that serves writes answers the list as changed)."""
        return (FIXTURES / file).read_bytes()

    def _stream(self, path: str) -> Callable[[Callable[[], bool]], Iterator[bytes]]:
        watch = self._watch(path)

        def lines(alive: Callable[[], bool]) -> Iterator[bytes]:
            with self._lock:
                watch.opened += 1
            while not self._stopping.is_set() and alive():  # (a line is not taken for a gone client)
                try:
                    line = watch.lines.get(timeout=0.05)
                except queue.Empty:
                    continue
                if line is _END:
                    return
                yield line
                if line.startswith(b'{"type":"ERROR"'):
                    return  # (the server ends a watch after its ERROR event)

        return lines

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                if isinstance(self.request, ssl.SSLSocket):
                    self.request.do_handshake()
                super().setup()

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                content_type = self.headers.get("Content-Type", "")
                auth = self.headers.get("Authorization", "")
                user = TOKENS.get(auth.removeprefix("Bearer ").strip()) if auth.startswith("Bearer ") else None
                double.log.append((self.command, self.path, user or "-"))
                if body:
                    double.bodies.append((self.command, self.path, content_type, body))
                if user is None:
                    self._send(Reply(401, "application/json", _UNAUTHORIZED))
                    return
                answer = double.answer(self.command, self.path, user, body, content_type)
                if isinstance(answer, Reply):
                    self._send(answer)
                    return
                if callable(answer):
                    answer = answer(self._alive)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for line in answer:
                        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    pass  # (the client went away: gpuq stopped watching)
                self.close_connection = True

            def _alive(self) -> bool:
                """Whether the client still holds the connection (a closed one reads as EOF)."""
                sock = self.connection
                try:
                    readable, _, _ = select.select([sock], [], [], 0)
                    if isinstance(sock, ssl.SSLSocket):  # (no peeking under TLS; a watching client sends nothing)
                        return not readable
                    return not readable or sock.recv(1, socket.MSG_PEEK) != b""
                except OSError:
                    return False

            def _send(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        return Handler


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # (a client gone mid-handshake or mid-request, a process that ended: nothing to report)
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (its own CA) and its key, made in `folder` by the openssl
    command (the standard library cannot make one)."""
    cert, key = folder / "double-cert.pem", folder / "double-key.pem"
    if not cert.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(  # noqa: S603 - a fixed command line
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:TRUE"],
            check=True, capture_output=True,
        )  # fmt: skip
    return cert, key


def _not_served() -> Reply:
    """The server's answer for a path it does not serve (recording 03)."""
    return Reply(404, "text/plain; charset=utf-8", (FIXTURES / "03-kueue-workloads-404.txt").read_bytes())


def _status(code: int, reason: str, message: str) -> bytes:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": reason, "code": code}).encode()  # fmt: skip
