"""List + watch of one resource, as client-go's reflector does it.

`list_all` reads a collection in pages (``limit``/``continue``); an expired continue token (HTTP
410) starts the list once more from the beginning. An `Informer` keeps a `Store` current: one
list, then a watch from the list's resourceVersion that applies ADDED/MODIFIED/DELETED as they
come and moves the resourceVersion on with each event and BOOKMARK. A watch the server ends (its
``timeoutSeconds``) is reopened from the last resourceVersion; only when the server says that
version is gone — HTTP 410, or an in-stream ``ERROR`` event with code 410 (sent with HTTP 200) —
does it list again, once, cleanly. Any other failure stops the watch and is kept in `error`: the
next snapshot lists again (and says so if the server is still away).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from gpuq.backends.kubernetes.client import ApiError, Expired, KubeClient, WatchStream
from gpuq.backends.kubernetes.wire import ListMeta, ObjectMeta
from gpuq.errors import GpuqError
from gpuq.jsonsafe import decoded
from gpuq.textsafe import visible

__all__ = ["DEFAULT_PAGE", "Informer", "Listed", "ResourceSpec", "Store", "gc_paused", "list_all"]

#: objects per page (kubectl's default chunk size)
DEFAULT_PAGE = 500


class _Object(Protocol):
    @property
    def metadata(self) -> ObjectMeta: ...


class _List(Protocol):
    @property
    def metadata(self) -> ListMeta: ...

    @property
    def items(self) -> Any: ...


T = TypeVar("T", bound=_Object)


class _Meta(msgspec.Struct, gc=False):
    """A list's or a BOOKMARK's metadata alone (the items are skipped, not built)."""

    metadata: ListMeta = msgspec.field(default_factory=ListMeta)


_META = msgspec.json.Decoder(_Meta)


@dataclass(frozen=True, slots=True)
class ResourceSpec(Generic[T]):
    """One collection gpuq lists and watches."""

    #: a short name for messages and notes ("pods", "nodes", "priorityclasses")
    name: str
    path: str
    list_type: type[Any]
    item_type: type[T]
    query: Mapping[str, str] = field(default_factory=dict)
    #: objects to keep (the rest are dropped as they arrive: pods that request no GPU)
    keep: Callable[[T], bool] | None = None


@dataclass(slots=True)
class Listed(Generic[T]):
    items: list[T]
    resource_version: str
    pages: int
    relists: int


def list_all(client: KubeClient, spec: ResourceSpec[T], limit: int = DEFAULT_PAGE) -> Listed[T]:
    """Every object of `spec`, page by page; an expired continue token (HTTP 410) restarts the
    list once from the start (a second 410 raises `Expired`). The next page is requested as soon
    as this one's continue token is read (its metadata comes first), so it travels while this
    page is decoded."""
    decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(spec.list_type)
    keep = spec.keep
    relists = 0
    with ThreadPoolExecutor(1, thread_name_prefix=f"gpuq-k8s-list-{spec.name}") as pool:
        while True:
            items: list[T] = []
            token, pages = "", 0
            seen: set[str] = set()
            pending = pool.submit(_page, client, spec, limit, token)
            try:
                while True:
                    body = pending.result()
                    pages += 1
                    after = _decoded(client, spec, _META, body).metadata.continue_
                    if after:
                        _check_paging(client, spec, after, seen, pages)
                        token = after
                        pending = pool.submit(_page, client, spec, limit, after)
                    page: _List = _decoded(client, spec, decoder, body)
                    found = page.items
                    items.extend(found if keep is None else filter(keep, found))
                    if not after:
                        return Listed(items, page.metadata.resource_version, pages, relists)
            except Expired:
                if not token or relists:
                    raise
                relists += 1


#: the most pages one list reads: a server that hands out a continue token on every page would
#: otherwise be paged for ever (500 at the default page size: 2,500,000 objects of one kind)
MAX_PAGES = 500


def _check_paging(client: KubeClient, spec: ResourceSpec[Any], token: str, seen: set[str], pages: int) -> None:
    """ApiError when a continue token comes back that this list was given before (the server
    would hand out the same pages again) or the list runs past `MAX_PAGES`."""
    if token in seen:
        raise ApiError(f"{client.server}: list {spec.name}: the server gave page {pages}'s continue token before "
                       "(it would page for ever)", 200)  # fmt: skip
    if pages >= MAX_PAGES:
        raise ApiError(f"{client.server}: list {spec.name}: more than {MAX_PAGES} pages; narrow it (-n, -l)", 200)
    seen.add(token)


def _page(client: KubeClient, spec: ResourceSpec[Any], limit: int, token: str) -> bytes:
    query = {**spec.query, "limit": str(limit)}
    if token:
        query["continue"] = token
    return client.request("GET", spec.path, query).body


def _decoded(client: KubeClient, spec: ResourceSpec[Any], decoder: msgspec.json.Decoder[Any], body: bytes) -> Any:
    try:
        return decoded(decoder.decode, body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ApiError(f"{client.server}: list {spec.name}: unexpected answer ({visible(str(exc))})", 200) from None


_gc_lock = threading.Lock()
_gc_holders = 0
_gc_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector paused while a list is decoded and converted: hundreds of thousands
    of new objects, none in a cycle, would otherwise set off collection after collection that
    walk them all (about half of a 150,000-pod list's time, benchmarks/README.md). Nested and
    concurrent uses (a watch thread re-listing) resume it once, at the last exit."""
    global _gc_holders, _gc_was_enabled
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_was_enabled:
                gc.enable()


class Store(Generic[T]):
    """One resource's objects by key (``namespace/name``) and the resourceVersion they are at.
    Not locked itself: the informer's owner passes a lock (`Informer.lock`)."""

    def __init__(self, spec: ResourceSpec[T]) -> None:
        self.spec = spec
        self.items: dict[str, T] = {}
        self.resource_version = ""
        #: why the resource cannot be read (a 403), "" when it can
        self.denied = ""

    def replace(self, items: Iterable[T], resource_version: str) -> None:
        self.items = {obj.metadata.key: obj for obj in items}
        self.resource_version = resource_version

    def apply(self, kind: str, obj: T) -> tuple[T | None, T | None]:
        """Apply one watch event; (the object before, after) under its key, None for absent."""
        meta = obj.metadata
        if meta.resource_version:
            self.resource_version = meta.resource_version
        key = meta.key
        old = self.items.get(key)
        if kind == "DELETED" or (self.spec.keep is not None and not self.spec.keep(obj)):
            self.items.pop(key, None)
            return old, None
        self.items[key] = obj
        return old, obj


#: called under the lock: (store, the object before, after) for an event; (store, None, None) after a list
Listener = Callable[[Store[Any], Any, Any], None]


class Informer(Generic[T]):
    """Keeps `store` current by list + watch (see the module docstring) in a daemon thread."""

    def __init__(
        self,
        client: KubeClient,
        spec: ResourceSpec[T],
        lock: threading.RLock,
        listener: Listener,
        *,
        watch_timeout_s: int = 300,
        page: int = DEFAULT_PAGE,
    ) -> None:
        self.client = client
        self.spec = spec
        self.store: Store[T] = Store(spec)
        self.lock = lock
        self.listener = listener
        self.watch_timeout_s = watch_timeout_s
        self.page = page
        self._item: msgspec.json.Decoder[T] = msgspec.json.Decoder(spec.item_type)
        self._thread: threading.Thread | None = None
        self._stream: WatchStream | None = None
        self._stop = threading.Event()
        #: what stopped the watch (None while it runs or before it starts)
        self.error: GpuqError | None = None
        #: lists made (the first included), re-lists after a 410, events applied (tests read these)
        self.lists = 0
        self.relists = 0
        self.events = 0
        self._changed = threading.Condition(lock)

    # ------------------------------------------------------------------ list
    def list(self) -> None:
        """List now and replace the store (raises what the list raises)."""
        with gc_paused():
            listed = list_all(self.client, self.spec, self.page)
            with self.lock:
                self.store.replace(listed.items, listed.resource_version)
                self.store.denied = ""
                self.lists += 1
                self.relists += listed.relists
                self.listener(self.store, None, None)
                self._changed.notify_all()

    # ------------------------------------------------------------------ watch
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Watch in a daemon thread from the store's resourceVersion (after `list`)."""
        if self.running:
            return
        self.error = None
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"gpuq-k8s-watch-{self.spec.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the watch to end, waking it if it is blocked in a read (`WatchStream.interrupt`:
        the socket is shut down, not closed under the reader; the thread closes it itself)."""
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.interrupt()

    def join(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the watch thread to end (after `stop`); whether it has."""
        thread = self._thread
        if thread is not None:
            thread.join(max(timeout_s, 0.0))
        return not self.running

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self._watch_once()
                except Expired:
                    if self._stop.is_set():
                        return
                    self.list()  # (one clean re-list, then watch again from its resourceVersion)
                    with self.lock:
                        self.relists += 1
        except GpuqError as exc:
            if not self._stop.is_set():
                with self.lock:
                    self.error = exc
                    self._changed.notify_all()
        except Exception as exc:  # noqa: BLE001 - a watch thread must never die silently
            with self.lock:
                self.error = GpuqError(f"watch of {self.spec.name} failed: {type(exc).__name__}: {exc}")
                self._changed.notify_all()

    def _watch_once(self) -> None:
        with self.lock:
            version = self.store.resource_version
        stream = self.client.watch(self.spec.path, self.spec.query, version, self.watch_timeout_s)
        self._stream = stream
        try:
            if self._stop.is_set():
                return
            for kind, raw in stream:
                if self._stop.is_set():
                    return
                self._apply(kind, raw)
        finally:
            self._stream = None
            stream.close()

    def _apply(self, kind: str, raw: msgspec.Raw) -> None:
        if kind == "BOOKMARK":
            meta = decoded(_META.decode, raw).metadata
            with self.lock:
                if meta.resource_version:
                    self.store.resource_version = meta.resource_version
                self._changed.notify_all()
            return
        obj = decoded(self._item.decode, raw)
        with self.lock:
            old, new = self.store.apply(kind, obj)
            self.events += 1
            if old is not None or new is not None:
                self.listener(self.store, old, new)
            self._changed.notify_all()

    def wait(self, until: Callable[[], bool], timeout_s: float) -> bool:
        """Wait (tests) until `until()` holds, checked under the lock after each change."""
        with self._changed:
            return self._changed.wait_for(lambda: until() or self.error is not None, timeout_s) and until()
