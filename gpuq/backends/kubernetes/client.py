"""Requests to the Kubernetes API server, bodies kept as bytes.

The official `kubernetes` client does what it is good at: finding and reading the kubeconfig the
way kubectl does (``KUBECONFIG``, a colon-separated list, else ``~/.kube/config``; a context; exec
and OIDC token refresh), in-cluster service-account config, TLS client certificates and CAs (the
urllib3 pool it configures). Requests go through that pool directly with ``preload_content=False``,
so list and watch bodies reach msgspec as bytes (`gpuq.backends.kubernetes.wire`), never through
the client's generated models.

Every failure becomes a gpuq error naming the server or what was denied: connection refused,
a timeout or a TLS failure → `Unreachable` (exit 3); 401/403 → `PermissionDenied` naming the
verb and resource (exit 4); 404 → `NotFound`; 410 → `Expired` (the caller re-lists); others →
`ApiError` carrying the server's own Status message.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import threading
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import msgspec

from gpuq.backends.kubernetes.wire import Status
from gpuq.errors import BadInput, GpuqError, GpuqWarning, NotFound, PermissionDenied, Unreachable
from gpuq.jsonsafe import decoded
from gpuq.textsafe import visible

__all__ = [
    "ApiError",
    "Expired",
    "KubeClient",
    "Response",
    "describe_request",
]

T = TypeVar("T")

#: the most of an error body quoted in a message
_MESSAGE_MAX = 300
_STATUS = msgspec.json.Decoder(Status)


class ApiError(GpuqError):
    """The server answered with an error status; `status` is its Status body (when JSON)."""

    exit_code = 1

    def __init__(self, message: str, code: int, status: Status | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class Expired(ApiError):
    """HTTP 410 Gone, or a watch stream's ERROR event with code 410: the resourceVersion or
    continue token is too old. A list+watch starts again with a fresh list."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    content_type: str
    body: bytes


def describe_request(method: str, path: str, query: Mapping[str, str] | None = None) -> tuple[str, str]:
    """RBAC's verb and resource of a request, for messages: ``("list", "nodes")``,
    ``("create", "pods/eviction in namespace ml-team-b")``."""
    query = query or {}
    parts = [p for p in path.split("?")[0].split("/") if p]
    # /api/v1/... or /apis/GROUP/VERSION/...
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return method.lower(), "/" + "/".join(parts)
    namespace = ""
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else ""
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource += "/" + rest[2]
    verb = {
        "GET": "get" if named else ("watch" if query.get("watch") in ("1", "true") else "list"),
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if named else "deletecollection",
    }.get(method.upper(), method.lower())
    what = f"{resource}.{group}" if group else resource
    if named:
        what += f" {rest[1]}"
    where = f" in namespace {namespace}" if namespace else ""
    return verb, what + where


class KubeClient:
    """One API server, found through a kubeconfig or in-cluster config (see the module docstring).

    Nothing is read until the first request, so building a backend never touches the network or
    the kubeconfig; a bad kubeconfig is then a `BadInput` naming it (exit 2).
    """

    def __init__(
        self,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        timeout_s: float = 10.0,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.context = context
        self.in_cluster = in_cluster
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._configuration: Any = None
        self._pool: Any = None
        self.server = ""
        #: where the connection came from, in words ("kubeconfig /path, context lab", "in-cluster")
        self.source = ""
        #: requests made, by "METHOD path?query" (tests and benchmarks read it)
        self.requests: list[str] = []

    # ------------------------------------------------------------------ configuration
    def _connect(self) -> tuple[Any, Any]:
        with self._lock:
            if self._pool is None:
                self._configuration, self._pool = self._load()
            return self._configuration, self._pool

    def _load(self) -> tuple[Any, Any]:
        # (lazy: ~0.2 s, paid only for a Kubernetes cluster; untyped in some releases, so as Any)
        kclient: Any = importlib.import_module("kubernetes.client")
        kconfig: Any = importlib.import_module("kubernetes.config")

        configuration = kclient.Configuration()
        explicit = self.kubeconfig or os.environ.get("KUBECONFIG", "")
        default = Path("~/.kube/config").expanduser()
        try:
            if self.in_cluster:
                kconfig.load_incluster_config(client_configuration=configuration)
                self.source = "in-cluster service account"
            elif explicit or default.exists():
                files = explicit or str(default)
                kconfig.load_kube_config(
                    config_file=files, context=self.context, client_configuration=configuration, persist_config=False
                )
                self.source = f"kubeconfig {files}" + (f", context {self.context}" if self.context else "")
            elif os.environ.get("KUBERNETES_SERVICE_HOST"):
                kconfig.load_incluster_config(client_configuration=configuration)
                self.source = "in-cluster service account"
            else:
                raise BadInput(
                    "no Kubernetes configuration found: KUBECONFIG is unset, ~/.kube/config does not exist and "
                    "gpuq is not running in a cluster (set KUBECONFIG, or the backend's kubeconfig option)"
                )
        except kconfig.ConfigException as exc:
            where = self.source or ("in-cluster config" if self.in_cluster else f"kubeconfig {explicit or default}")
            raise BadInput(f"{where}: {visible(str(exc))}") from None
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise BadInput(f"kubeconfig {explicit or default}: {visible(str(exc))}") from None
        self.server = str(configuration.host).rstrip("/")
        if self.server.startswith("https:") and not configuration.verify_ssl:
            # urllib3 warns at every request, a block of lines each: said once here instead
            import urllib3

            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            warnings.warn(
                f"the certificate of Kubernetes API server {visible(self.server)} is not verified "
                f"(insecure-skip-tls-verify, {visible(self.source)}): anyone between here and it could read "
                "or change what gpuq reads and does",
                GpuqWarning,
                stacklevel=2,
            )
        api = kclient.ApiClient(configuration)
        return configuration, api.rest_client.pool_manager

    def _headers(self, configuration: Any, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "gpuq"}
        if content_type:
            headers["Content-Type"] = content_type
        for setting in configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    # ------------------------------------------------------------------ requests
    def url(self, path: str, query: Mapping[str, str] | None = None) -> str:
        return path + ("?" + urlencode(query, quote_via=quote, safe="") if query else "")

    def open(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        *,
        body: Any = None,
        content_type: str | None = None,
        read_timeout_s: float | None = None,
    ) -> Any:
        """Send one request; the urllib3 response, body unread (status not checked)."""
        import urllib3

        configuration, pool = self._connect()
        target = self.url(path, query)
        self.requests.append(f"{method} {target}")
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        if data is not None and content_type is None:
            content_type = "application/json"
        timeout = urllib3.Timeout(connect=self.timeout_s, read=read_timeout_s or self.timeout_s)
        for attempt in (1, 2):
            try:
                return pool.request(
                    method, self.server + target, body=data, headers=self._headers(configuration, content_type),
                    timeout=timeout, retries=False, preload_content=False, redirect=False,
                )  # fmt: skip
            except urllib3.exceptions.ProtocolError as exc:
                # A kept-alive connection the server had closed (as it does after ending a watch):
                # a read is sent once more, on a new connection; a write is never sent twice.
                if attempt == 2 or method not in ("GET", "HEAD"):
                    raise self._unreachable(exc) from None
            except urllib3.exceptions.HTTPError as exc:
                raise self._unreachable(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        *,
        body: Any = None,
        content_type: str | None = None,
    ) -> Response:
        """One request and its whole body; an error status raises (`check`)."""
        import urllib3

        response = self.open(method, path, query, body=body, content_type=content_type)
        try:
            data = response.read()
        except urllib3.exceptions.HTTPError as exc:
            raise self._unreachable(exc) from None
        finally:
            response.release_conn()
        result = Response(response.status, response.headers.get("Content-Type", ""), data)
        self.check(method, path, query, result)
        return result

    def get(self, path: str, decoder: msgspec.json.Decoder[T], query: Mapping[str, str] | None = None) -> T:
        """GET `path` decoded by `decoder`; a body that is not the expected JSON is an ApiError."""
        response = self.request("GET", path, query)
        try:
            return decoded(decoder.decode, response.body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ApiError(
                f"{self.server}: GET {path}: unexpected answer ({visible(str(exc))})", response.status
            ) from None

    def check(self, method: str, path: str, query: Mapping[str, str] | None, response: Response) -> None:
        """Raise the gpuq error an error status means (nothing for 2xx)."""
        if 200 <= response.status < 300:
            return
        raise self.error(method, path, query, response.status, response.body)

    def error(self, method: str, path: str, query: Mapping[str, str] | None, code: int, body: bytes) -> GpuqError:
        status = _status_of(body)
        message = _text(status.message.encode()) if status is not None and status.message else _text(body)
        verb, resource = describe_request(method, path, query)
        if code in (401, 403):
            why = "not authenticated" if code == 401 else "forbidden"
            return PermissionDenied(f"Kubernetes API {self.server} denied {verb} {resource} ({why}): {message}")
        if code == 400:  # (a malformed selector or option: the server names what it could not parse)
            return BadInput(f"Kubernetes API {self.server}: {verb} {resource}: {message}")
        if code == 404:
            return NotFound(f"Kubernetes API {self.server}: {verb} {resource}: not found ({message})")
        if code == 410:
            return Expired(f"Kubernetes API {self.server}: {verb} {resource}: {message}", code, status)
        return ApiError(f"Kubernetes API {self.server}: {verb} {resource}: HTTP {code}: {message}", code, status)

    def _unreachable(self, exc: Exception) -> Unreachable:
        import urllib3

        reason = exc.reason if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason else exc
        # (urllib3 2.x: NewConnectionError, a refusal, subclasses ConnectTimeoutError: it goes first)
        if isinstance(reason, urllib3.exceptions.NewConnectionError):
            conn = getattr(reason, "conn", None)
            address = f"{conn.host}:{conn.port}" if conn is not None else self.server
            cause = reason.__cause__
            if isinstance(cause, ConnectionRefusedError):
                what = f"connection refused at {visible(address)} (nothing listens there)"
            elif isinstance(reason, urllib3.exceptions.NameResolutionError):
                what = f"cannot resolve {visible(str(getattr(conn, 'host', address)))} ({_short(cause or reason)})"
            else:
                what = f"cannot connect to {visible(address)} ({_short(cause or reason)})"
        elif isinstance(reason, urllib3.exceptions.TimeoutError):
            what = f"no answer within {self.timeout_s:g} s"
        elif isinstance(reason, urllib3.exceptions.SSLError):
            what = f"TLS failed ({_short(reason)})"
        else:
            what = _short(reason)
        return Unreachable(f"Kubernetes API server {self.server} unreachable: {what}")

    # ------------------------------------------------------------------ watch
    def watch(self, path: str, query: Mapping[str, str], resource_version: str, timeout_s: int) -> WatchStream:
        """Open a watch from `resource_version`; the server ends it after `timeout_s`.
        HTTP 410 raises `Expired` here, an in-stream 410 while iterating."""
        import urllib3

        params = {**query, "watch": "1", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(timeout_s)}  # fmt: skip
        response = self.open("GET", path, params, read_timeout_s=timeout_s + self.timeout_s)
        if not 200 <= response.status < 300:
            try:
                data = response.read()
            except urllib3.exceptions.HTTPError as exc:
                raise self._unreachable(exc) from None
            finally:
                response.release_conn()
            raise self.error("GET", path, params, response.status, data)
        return WatchStream(self, path, params, response)


class WatchStream:
    """The lines of one watch response, as ``(type, raw object)``; `interrupt` from another
    thread ends the iteration (the informer stopping)."""

    def __init__(self, client: KubeClient, path: str, query: Mapping[str, str], response: Any) -> None:
        self.client = client
        self.path = path
        self.query = query
        self.response = response
        self.closed = False

    def interrupt(self) -> None:
        """From another thread: wake a read blocked on this stream (it then ends, as if the
        server had closed it). The socket is shut down, not closed: closing it would free the
        TLS connection under the reading thread, which is still inside OpenSSL."""
        self.closed = True
        try:
            shutdown = getattr(self.response, "shutdown", None)
            if shutdown is not None:
                shutdown()
        except Exception:  # noqa: BLE001, S110 - a socket already gone needs no waking
            pass

    def close(self) -> None:
        """From the reading thread (or once it is done): release the connection."""
        self.closed = True
        with contextlib.suppress(Exception):  # (closing a dead socket may fail; it is closed either way)
            self.response.close()

    def __iter__(self) -> Iterator[tuple[str, msgspec.Raw]]:
        import urllib3

        from gpuq.backends.kubernetes.wire import WatchEvent

        decoder = msgspec.json.Decoder(WatchEvent)
        pending = b""
        try:
            for chunk in self.response.stream(65536, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield self._event(decoder, line)
            if pending.strip():
                yield self._event(decoder, pending)
        except urllib3.exceptions.HTTPError as exc:
            if not self.closed:
                raise self.client._unreachable(exc) from None
        except (OSError, ValueError, AttributeError):
            if not self.closed:  # (a socket closed under the read by `close`)
                raise
        finally:
            self.response.release_conn()

    def _event(self, decoder: msgspec.json.Decoder[Any], line: bytes) -> tuple[str, msgspec.Raw]:
        try:
            event = decoded(decoder.decode, line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ApiError(
                f"{self.client.server}: watch {self.path}: unreadable event ({visible(str(exc))})", 200
            ) from None
        if event.type == "ERROR":
            status = _status_of(bytes(event.object))
            code = status.code if status is not None else 500
            raise self.client.error("GET", self.path, self.query, code, bytes(event.object))
        return event.type, event.object


def _status_of(body: bytes) -> Status | None:
    try:
        status = decoded(_STATUS.decode, body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return status if status.kind == "Status" or status.code else None


def _text(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    return visible(text if len(text) <= _MESSAGE_MAX else text[:_MESSAGE_MAX] + "…")


def _short(exc: BaseException) -> str:
    text = str(exc)
    # urllib3 puts the pool object's repr first ("<urllib3.connection.HTTPConnection object at …>: …")
    if text.startswith("<") and ">: " in text:
        text = text.split(">: ", 1)[1]
    return visible(text if len(text) <= _MESSAGE_MAX else text[:_MESSAGE_MAX] + "…")
