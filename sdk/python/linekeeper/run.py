"""A run as the SDK follows it.

``for step in run.stream():`` is the spec's "yields steps with name, status and duration": every time a step's
status changes, that step, in plan order, until the run is terminal. The daemon keeps step statuses in the
run record (GET /runs/{id}) and streams the tool-call log (server-sent events); a new line means the run
moved, so each burst of lines triggers one read of the record, and while the stream is quiet (the gate
waiting for QA, a held run) the record is read every ``poll_interval`` seconds. A step status is yielded
once: the iterator remembers what it yielded, so neither a reconnection (resumed with Last-Event-ID) nor a
repeated read can repeat one.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional, Tuple

from .errors import LinekeeperError
from .events import ToolCallStream

if TYPE_CHECKING:
    from .client import Client

#: Reads of the run record triggered by lines are at least this far apart (s): a burst of lines is one read.
_MIN_REREAD_S = 0.1


@dataclass(frozen=True)
class ExceptionMarker:
    """The exceptions raised in a step (or run): a step that SUCCEEDED with exceptions is not a plain success."""

    total: int
    open: int
    #: Open and critical or major: a batch release waits for these to be closed.
    blocking: int
    kinds: Tuple[str, ...]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ExceptionMarker":
        return cls(total=int(d["total"]), open=int(d["open"]), blocking=int(d["blocking"]), kinds=tuple(str(k) for k in d["kinds"]))


@dataclass(frozen=True)
class Step:
    """A step of the run, as ``run.stream()`` yields it each time its status changes."""

    #: Two-digit position in the plan: ``01`` … ``10``.
    seq: str
    #: Dotted step name: ``ingest.batch_record`` … ``release.genealogy``.
    name: str
    status: str
    #: As the spec renders it: ``4.2s``, ``2:05``, ``continuous`` for inspection, empty before it started.
    duration: str
    duration_ms: Optional[float]
    agent: str
    tool: str
    detail: str
    attempt: int
    #: The QA approval gate of the run.
    gate: bool
    #: The step's exceptions: how many, open, blocking the release, and of which kinds (None when not read).
    exceptions: Optional[ExceptionMarker] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Step":
        marker = d.get("exceptions")
        return cls(
            seq=str(d["seq"]), name=str(d["name"]), status=str(d["status"]), duration=str(d["duration"]), duration_ms=d.get("durationMs"),
            agent=str(d["agent"]), tool=str(d["tool"]), detail=str(d["detail"]), attempt=int(d["attempt"]), gate=bool(d["gate"]),
            exceptions=ExceptionMarker.from_json(marker) if isinstance(marker, dict) else None,
        )


class Run:
    """One run of a batch on a line, read through a client."""

    def __init__(self, client: "Client", run_id: str, record: Optional[Dict[str, Any]] = None) -> None:
        self.client = client
        self.id = run_id
        #: The run record as last read (the plan and steps at start, until ``refresh`` or ``stream`` reads it again).
        self.record = record

    def __repr__(self) -> str:
        status = self.record.get("status") if self.record else None
        return f"Run({self.id!r}, status={status!r})"

    def refresh(self) -> Dict[str, Any]:
        """Read the run again (GET /runs/{id})."""
        self.record = self.client.get_run(self.id)
        return self.record

    def tool_calls(self, after: int = 0) -> ToolCallStream:
        """The raw tool-call lines as they are logged (resumed with Last-Event-ID); ``status`` once it ended."""
        return self.client.tool_calls(self.id, after)

    def stream(self, poll_interval: Optional[float] = None) -> Iterator[Step]:
        """Each step every time its status changes, in plan order; steps already under way or done are yielded
        first. Ends once the run is terminal and its stream has ended (``run.record`` then holds the final record).

        :raises LinekeeperError: what reading the run or its stream is refused with (LK_NOT_FOUND, LK_TOO_MANY_STREAMS, …).
        """
        poll = self.client.poll_interval if poll_interval is None else poll_interval
        yielded: Dict[str, Tuple[str, int]] = {}
        with self.tool_calls() as lines:
            ended = False
            while True:
                read_at = time.monotonic()
                record = self.refresh()
                for s in record["steps"]:
                    seen = (s["status"], s["attempt"])
                    if s["status"] == "PENDING" or yielded.get(s["seq"]) == seen:
                        continue
                    yielded[s["seq"]] = seen
                    yield Step.from_json(s)
                if ended:
                    return
                # wait for a line (then for the burst to pass), the end, or the poll interval
                wait, moved = poll, False
                while not (moved and wait <= 0):
                    kind, _ = lines.next_item(max(wait, 0.0))
                    if kind == "timeout":
                        break
                    if kind == "end":
                        ended = True
                        break
                    moved = True
                    wait = read_at + _MIN_REREAD_S - time.monotonic()

    def approve(self, decision: str, meaning: str, password: str, comment: Optional[str] = None) -> Dict[str, Any]:
        """Sign the run's approval gate as this client's user (a QA reviewer, re-authenticated with the password).

        :raises LinekeeperError: LK_RUN_STATE when the run has no gate request yet; what POST /approvals/{id} refuses.
        """
        gate = self.refresh()["approvalGate"]
        if not gate.get("id"):
            raise LinekeeperError("LK_RUN_STATE", f"run {self.id} has not reached its approval gate (step {gate.get('step')} is {gate.get('status')})")
        return self.client.approve(gate["id"], decision, meaning, password, comment=comment)

    def genealogy(self) -> Dict[str, Any]:
        """GET /runs/{id}/genealogy."""
        return self.client.genealogy(self.id)

    def exceptions(self) -> Dict[str, Any]:
        """GET /runs/{id}/exceptions: what deviated in this run, open or closed, and its specification table."""
        return self.client.exceptions(self.id)
