"""A run's tool-call log as an iterator, over the daemon's server-sent events.

GET /runs/{id}/stream sends one event per log line (``id:`` the line id, ``event: call|ok|error``, ``data:``
the line as JSON), then ``event: end``. A background thread reads the stream and reconnects after a dropped
connection (a reset, a read time-out, a close under it), naming the last line it handed on in
``Last-Event-ID``: the daemon sends exactly what is missing, and a line is never handed on twice. A daemon
not ready (503, starting or stopping) is tried again the same way.
"""
from __future__ import annotations

import http.client
import json
import os
import queue
import socket
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple, Union

from .errors import LinekeeperError

if TYPE_CHECKING:
    from .client import Client


@dataclass(frozen=True)
class ToolCall:
    """One line of the tool-call log: a call with its arguments, or its ok / error result."""

    id: int
    run: str
    at: int
    time: str
    kind: str
    step: str
    agent: str
    tool: str
    args: Any = None
    summary: Optional[str] = None
    result: Any = None
    audit_seq: Optional[int] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ToolCall":
        return cls(
            id=int(d["id"]), run=str(d["run"]), at=int(d["at"]), time=str(d["time"]), kind=str(d["kind"]), step=str(d["step"]),
            agent=str(d["agent"]), tool=str(d["tool"]), args=d.get("args"), summary=d.get("summary"), result=d.get("result"),
            audit_seq=d.get("auditSeq"),
        )


@dataclass(frozen=True)
class SseEvent:
    event: str
    data: str
    id: Optional[str]


class SseParser:
    """The text/event-stream format, line by line (WHATWG HTML § 9.2.6); ``retry`` is kept in milliseconds."""

    def __init__(self) -> None:
        self.retry_ms: Optional[int] = None
        self._event = ""
        self._data: List[str] = []
        self._id: Optional[str] = None

    def feed(self, raw: bytes) -> Optional[SseEvent]:
        """One line (with or without its line break); the event it completes, if any."""
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line == "":
            if not self._data:
                self._event = ""
                return None
            ev = SseEvent(self._event or "message", "\n".join(self._data), self._id)
            self._event, self._data = "", []
            return ev
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None


_Item = Union[Tuple[str, ToolCall], Tuple[str, Optional[str]], Tuple[str, LinekeeperError]]


def _shutdown(resp: Any) -> None:
    """Close a response's connection at once, also while another thread is blocked reading it."""
    try:
        fd = resp.fileno()
        if isinstance(fd, int) and fd >= 0:
            s = socket.socket(fileno=os.dup(fd))
            try:
                s.shutdown(socket.SHUT_RDWR)
            finally:
                s.close()
    except (OSError, AttributeError, ValueError):
        pass
    try:
        resp.close()
    except Exception:  # noqa: BLE001 - closing what may already be gone
        pass


class ToolCallStream(Iterator[ToolCall]):
    """The lines of one run's log as they are written; iteration ends at ``end`` (``status`` then holds the
    run's terminal status) and raises :class:`LinekeeperError` when the daemon refuses the stream
    (LK_NOT_FOUND, LK_TOO_MANY_STREAMS, LK_UNAUTHENTICATED) or cannot be reached ``max_retries`` times in a row
    (LK_API_UNREACHABLE). Close it (or use it in a ``with``) when leaving early."""

    def __init__(self, client: "Client", run_id: str, after: int = 0, *, max_retries: int = 20, read_timeout: float = 60.0) -> None:
        self._client = client
        self._run_id = run_id
        self._max_retries = max_retries
        self._read_timeout = read_timeout
        self._q: "queue.Queue[_Item]" = queue.Queue()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._resp: Any = None
        self._finished = False
        #: The id of the last line received (what a reconnection names in Last-Event-ID).
        self.last_event_id = after
        #: The run's terminal status, once the daemon sent ``end``.
        self.status: Optional[str] = None
        self._thread = threading.Thread(target=self._read, name=f"linekeeper-sse-{run_id}", daemon=True)
        self._thread.start()

    def __enter__(self) -> "ToolCallStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop reading and close the connection (idempotent)."""
        self._closed.set()
        with self._lock:
            resp, self._resp = self._resp, None
        if resp is not None:
            _shutdown(resp)

    def __next__(self) -> ToolCall:
        kind, value = self.next_item(None)
        if kind == "line":
            return value  # type: ignore[return-value]
        raise StopIteration

    def next_item(self, timeout: Optional[float]) -> Tuple[str, Any]:
        """``("line", ToolCall)``, ``("end", status)``, or ``("timeout", None)`` after ``timeout`` seconds.

        :raises LinekeeperError: the stream was refused or the daemon could not be reached.
        """
        if self._finished:
            return ("end", self.status)
        try:
            kind, value = self._q.get(timeout=timeout)
        except queue.Empty:
            return ("timeout", None)
        if kind == "error":
            self._finished = True
            self.close()
            raise value  # type: ignore[misc]
        if kind == "end":
            self._finished = True
            self.status = value  # type: ignore[assignment]
            self.close()
        return (kind, value)

    # the reader thread ---------------------------------------------------------------------------------------

    def _read(self) -> None:
        retry_s = 3.0
        failures = 0
        while not self._closed.is_set():
            try:
                resp = self._client._open_stream(self._run_id, self.last_event_id, self._read_timeout)
            except LinekeeperError as err:
                # no answer, or a daemon starting or stopping: come back later, within max_retries
                if err.code not in ("LK_API_UNREACHABLE", "LK_NOT_READY"):
                    self._q.put(("error", err))
                    return
                failures += 1
                if failures > self._max_retries:
                    self._q.put(("error", LinekeeperError("LK_API_UNREACHABLE", f"the tool-call stream could not reconnect after {self._max_retries} attempts (last line {self.last_event_id}): {err.detail}")))
                    return
                self._closed.wait(retry_s)
                continue
            failures = 0
            with self._lock:
                if self._closed.is_set():
                    _shutdown(resp)
                    return
                self._resp = resp
            parser = SseParser()
            try:
                for raw in iter(resp.readline, b""):
                    if raw.startswith(b":"):
                        # a keep-alive: the moment to renew the token a quiet stream's session needs
                        try:
                            self._client.renew_if_due()
                        except LinekeeperError as err:
                            self._q.put(("error", err))
                            return
                    ev = parser.feed(raw)
                    if parser.retry_ms is not None:
                        retry_s = parser.retry_ms / 1000.0
                    if ev is None or self._closed.is_set():
                        continue
                    if ev.event == "session_end":
                        # the daemon ended the stream's session (signed out, disabled, not renewed): a
                        # reconnection would only be refused, so the iteration stops here
                        try:
                            detail = str(json.loads(ev.data).get("detail") or "")
                        except (ValueError, AttributeError):
                            detail = ""
                        self._q.put(("error", LinekeeperError(
                            "LK_UNAUTHENTICATED",
                            f"{detail or 'the session of this event stream ended'} (last line {self.last_event_id}); sign in again and resume with after={self.last_event_id}",
                            401)))
                        return
                    if ev.event not in ("call", "ok", "error", "end"):
                        continue
                    try:
                        data = json.loads(ev.data)
                        line = ToolCall.from_json(data) if ev.event != "end" else None
                    except (ValueError, KeyError, TypeError) as err:
                        self._q.put(("error", LinekeeperError("LK_API_RESPONSE", f"an event of the tool-call stream is not a log line: {ev.data[:120]} ({err})")))
                        return
                    if line is None:
                        status = data.get("status") if isinstance(data, dict) else None
                        self._q.put(("end", status if isinstance(status, str) else None))
                        return
                    if line.id <= self.last_event_id:
                        continue
                    self.last_event_id = line.id
                    self._q.put(("line", line))
            except (OSError, http.client.HTTPException, ValueError, AttributeError):
                # the connection dropped (reset, read time-out, closed under us): reconnect below
                pass
            finally:
                with self._lock:
                    if self._resp is resp:
                        self._resp = None
                _shutdown(resp)
            self._closed.wait(retry_s)

