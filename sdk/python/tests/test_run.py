"""The Python SDK against a running linekeeper daemon (skipped unless LINEKEEPER_URL is set).

Environment: LINEKEEPER_URL (the API, e.g. http://127.0.0.1:8080), LINEKEEPER_OPERATOR_PASSWORD and
LINEKEEPER_QA_PASSWORD (the one-time passwords `linekeeper serve` prints on its first start); optional
LINEKEEPER_TENANT (acme-pharma), LINEKEEPER_OPERATOR (o.operator), LINEKEEPER_QA (m.rossi), LINEKEEPER_LINE
(line-3), LINEKEEPER_BATCH (B-1042), LINEKEEPER_PRODUCT (ir-family-a), LINEKEEPER_TOOLING (round-10mm-ff).
The line must be idle: the test starts a run of the batch, follows it step by step across a connection
dropped under it, signs the release as the QA reviewer and waits for SUCCEEDED. Each step it sees is printed
as `step <seq> <name> <status> <duration>` on stdout.
"""
import io
import os
import pathlib
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
from email.message import Message
from typing import Any, List, Optional

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # sdk/python: the package under test

from linekeeper import Agent, Client, DesignSpace, LinekeeperError, Step, Tool, set_default_client  # noqa: E402

ENV = os.environ
URL = ENV.get("LINEKEEPER_URL", "")
TENANT = ENV.get("LINEKEEPER_TENANT", "acme-pharma")
OPERATOR = ENV.get("LINEKEEPER_OPERATOR", "o.operator")
QA = ENV.get("LINEKEEPER_QA", "m.rossi")
LINE = ENV.get("LINEKEEPER_LINE", "line-3")
BATCH = ENV.get("LINEKEEPER_BATCH", "B-1042")
PRODUCT = ENV.get("LINEKEEPER_PRODUCT", "ir-family-a")
TOOLING = ENV.get("LINEKEEPER_TOOLING", "round-10mm-ff")
STEP_NAMES = ["ingest.batch_record", "twin.rehearse", "blend.uniformity", "granulate.dry", "compress.press", "coat.spray", "inspect.tablets",
              "spectra.release_evidence", "approval.batch_release", "release.genealogy"]
GOAL = "keep weight and hardness on target, capping risk under 1.5%"
DROP_AFTER = 10


class _Dropping:
    """A stream response whose connection is closed under its reader right after its ``after``-th event."""

    def __init__(self, resp: Any, after: int) -> None:
        self._resp = resp
        self._after = after
        self._events = 0
        self._in_event = False

    def readline(self, *limit: int) -> bytes:
        if self._events >= self._after:
            self._resp.close()
            raise ConnectionResetError("connection dropped by the test")
        line: bytes = self._resp.readline(*limit)
        if line.startswith(b"id:"):
            self._in_event = True
        elif line.strip() == b"" and self._in_event:
            self._in_event = False
            self._events += 1
        return line

    def close(self) -> None:
        self._resp.close()

    def fileno(self) -> int:
        return int(self._resp.fileno())


class DroppingTransport:
    """``urlopen`` whose first event stream drops after a few events; records each stream request's Last-Event-ID."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.streams: List[Optional[str]] = []

    def __call__(self, req: urllib.request.Request, timeout: float) -> Any:
        resp = urllib.request.urlopen(req, timeout=timeout)
        if not req.full_url.endswith("/stream"):
            return resp
        self.streams.append(req.get_header("Last-event-id"))
        return _Dropping(resp, self.after) if len(self.streams) == 1 else resp


class NotReadyOnce:
    """``urlopen`` whose first event-stream request is answered 503 LK_NOT_READY."""

    def __init__(self) -> None:
        self.streams = 0

    def __call__(self, req: urllib.request.Request, timeout: float) -> Any:
        if req.full_url.endswith("/stream"):
            self.streams += 1
            if self.streams == 1:
                body = b'{"code":"LK_NOT_READY","status":503,"detail":"linekeeper is stopping"}'
                raise urllib.error.HTTPError(req.full_url, 503, "Service Unavailable", Message(), io.BytesIO(body))
        return urllib.request.urlopen(req, timeout=timeout)


def refusal(fn: Any) -> LinekeeperError:
    """The LinekeeperError ``fn`` raises (anything else, or nothing, fails)."""
    try:
        fn()
    except LinekeeperError as err:
        return err
    raise AssertionError("expected a LinekeeperError")


@unittest.skipUnless(URL, "LINEKEEPER_URL is not set: no daemon to run against")
class RunThroughTheSdkTest(unittest.TestCase):
    def operator(self, **kw: Any) -> Client:
        return Client(URL, user=OPERATOR, password=ENV["LINEKEEPER_OPERATOR_PASSWORD"], tenant=TENANT, poll_interval=0.25, **kw)

    def test_errors_carry_the_daemons_codes(self) -> None:
        bad = refusal(lambda: Client(URL, token="not-a-token", tenant=TENANT).list_runs())
        self.assertEqual((bad.code, bad.status), ("LK_UNAUTHENTICATED", 401))
        self.assertTrue(bad.detail)
        wrong = refusal(lambda: Client(URL, user=OPERATOR, password="not the password").sign_in())
        self.assertEqual((wrong.code, wrong.status), ("LK_UNAUTHENTICATED", 401))
        self.assertEqual(refusal(lambda: self.operator().get_run("run_00000000000000000000")).code, "LK_NOT_FOUND")
        self.assertEqual(refusal(lambda: Client("http://127.0.0.1:1", token="t", tenant=TENANT).list_runs()).code, "LK_API_UNREACHABLE")
        self.assertEqual(refusal(lambda: DesignSpace.approved("no-such-family", TOOLING, client=self.operator())).code, "LK_NOT_FOUND")
        self.assertEqual(refusal(lambda: Client("ftp://127.0.0.1", token="t")).code, "LK_VALIDATION")

    def test_the_token_is_timed_on_the_clients_own_clock(self) -> None:
        """A clock thirty days ahead of the daemon's renews neither at every request nor never: once, when the
        lifetime the daemon gave (expiresIn, by its clock) has passed by the client's own."""
        ahead = [30 * 86400.0]
        c = self.operator(now=lambda: time.time() + ahead[0])
        renewals: List[int] = []
        renew = c.renew

        def counting() -> None:
            renewals.append(1)
            renew()

        c.renew = counting  # type: ignore[method-assign]
        t = c.sign_in()
        lifetime = t["expiresIn"]
        self.assertIsInstance(lifetime, int)
        self.assertGreater(lifetime, 120)
        for _ in range(3):
            c.list_runs()
        self.assertEqual(renewals, [])
        ahead[0] += lifetime - 60  # a minute before its end, by the client's clock
        c.list_runs()
        c.list_runs()
        self.assertEqual(renewals, [1])

    def test_a_run_step_by_step_across_a_dropped_connection(self) -> None:
        transport = DroppingTransport(DROP_AFTER)
        op = self.operator(urlopen=transport)
        self.assertEqual(op.sign_in()["user"]["id"], OPERATOR)
        qa = Client(URL, user=QA, password=ENV["LINEKEEPER_QA_PASSWORD"], tenant=TENANT)

        limits = DesignSpace.approved(PRODUCT, TOOLING, client=op)
        force = limits.limit("press.MainForce")
        self.assertIsNotNone(force)
        self.assertEqual(force.unit, "kN")  # type: ignore[union-attr]
        press = Tool(name="press.write_setpoint", tags=["press.MainForce", "press.PreForce"], units={"press.MainForce": "kN", "press.PreForce": "kN"},
                     schema={"setpoint": str, "value": float}, limits=limits, read_only=False, autonomy_needed="L2")
        agent = Agent(id="agent.compress_fill", goal=GOAL, tools=[press], autonomy="L2", verify="twin", audit="part11")
        unreadable = refusal(lambda: agent.start(LINE, BATCH, goal="please make the tablets nicer", client=op))
        self.assertEqual((unreadable.code, unreadable.status), ("LK_RUN_REQUEST_INVALID", 422))

        set_default_client(op)
        try:
            run = agent.start(LINE, BATCH)
        finally:
            set_default_client(None)
        self.assertRegex(run.id, r"^run_[0-9a-z]+$")
        self.assertEqual((run.record["batch"], run.record["plan"]["steps"], run.record["plan"]["gates"]), (BATCH, 10, 1))  # type: ignore[index]
        print(f"started {run.id}", flush=True)

        # the operator stays attended while the run goes on (R5), as the console would keep them
        stop = threading.Event()

        def presence() -> None:
            while not stop.wait(5):
                try:
                    op.attendance()
                except LinekeeperError:
                    pass

        threading.Thread(target=presence, daemon=True).start()
        steps: List[Step] = []
        signature: Any = None
        # the batch's own data decides what QA can sign: a release, or, when a specification FAILed, only a rejection
        released = True
        try:
            for step in run.stream():
                steps.append(step)
                print(f"step {step.seq} {step.name} {step.status} {step.duration}", flush=True)
                if step.gate and step.status == "APPROVAL":
                    meaning = f"QA release of batch {BATCH}"
                    self.assertEqual(refusal(lambda: run.approve("approve", meaning, ENV["LINEKEEPER_OPERATOR_PASSWORD"])).code, "LK_FORBIDDEN")
                    self.assertEqual(refusal(lambda: qa.run(run.id).approve("approve", meaning, "not the password")).code, "LK_REAUTH_FAILED")
                    # review by exception: the release waits until QA has closed each blocking exception with a comment
                    listed = qa.run(run.id).exceptions()
                    self.assertEqual(len(listed["specTable"]["results"]), 11)
                    released = not any(r["verdict"] == "FAIL" for r in listed["specTable"]["results"])
                    if listed["counts"]["blocking"] > 0 or not released:
                        self.assertEqual(refusal(lambda: qa.run(run.id).approve("approve", meaning, ENV["LINEKEEPER_QA_PASSWORD"])).code, "LK_EXCEPTIONS_OPEN" if released else "LK_SPEC_FAILED")
                    for e in [x for x in listed["items"] if x["status"] == "open"]:
                        closed = qa.close_exception(e["id"], f"{e['kind']}: investigated; tablets of the excursion segregated", ENV["LINEKEEPER_QA_PASSWORD"], deviation="DEV-2026-0142")
                        self.assertEqual(closed["exception"]["status"], "closed")
                    print(f"closed {len(listed['items'])} exceptions", flush=True)
                    if released:
                        signature = qa.run(run.id).approve("approve", meaning, ENV["LINEKEEPER_QA_PASSWORD"])
                    else:
                        # every exception closed, and still no release: the data failed
                        self.assertEqual(refusal(lambda: qa.run(run.id).approve("approve", meaning, ENV["LINEKEEPER_QA_PASSWORD"])).code, "LK_SPEC_FAILED")
                        signature = qa.run(run.id).approve("reject", f"QA rejection of batch {BATCH}", ENV["LINEKEEPER_QA_PASSWORD"], comment="a specification failed")
                    print(f"signed {signature['user']} {signature['decision']}", flush=True)
        finally:
            stop.set()

        status = run.record["status"]  # type: ignore[index]
        print(f"run {run.id} {status}", flush=True)
        final = "SUCCEEDED" if released else "REJECTED"
        self.assertEqual(status, final)
        self.assertEqual((signature["user"], signature["decision"], signature["run"]), (QA, "approve" if released else "reject", run.id))
        # a released run has no way out left to take: resume, abort and reassign are refused by code, nothing changes
        self.assertEqual(refusal(lambda: qa.resume_run(run.id, "nothing to resume")).code, "LK_RUN_STATE")
        self.assertEqual(refusal(lambda: qa.abort_run(run.id, "too late", ENV["LINEKEEPER_QA_PASSWORD"])).code, "LK_RUN_STATE")
        self.assertEqual(refusal(lambda: qa.reassign_reviewer(run.id, "a.ricci", "on leave", ENV["LINEKEEPER_QA_PASSWORD"])).code, "LK_RUN_STATE")
        self.assertEqual(qa.get_run(run.id)["status"], final)
        # the first stream dropped after DROP_AFTER events; the SDK resumed naming the last line it had
        print(f"stream requests {transport.streams}", flush=True)
        self.assertGreaterEqual(len(transport.streams), 2)
        self.assertEqual(transport.streams[:2], [None, str(DROP_AFTER)])

        # the plan's steps in plan order, no status yielded twice, each SUCCEEDED with its duration
        self.assertEqual(list(dict.fromkeys(s.name for s in steps)), STEP_NAMES)
        keys = [(s.seq, s.status, s.attempt) for s in steps]
        self.assertEqual(len(set(keys)), len(keys))
        self.assertEqual([s.seq for s in steps], sorted(s.seq for s in steps))
        for name in STEP_NAMES:
            last = [s for s in steps if s.name == name][-1]
            expected = "SUCCEEDED" if released or name not in ("approval.batch_release", "release.genealogy") else ("REJECTED" if name == "approval.batch_release" else "SKIPPED")
            self.assertEqual(last.status, expected, name)
            if last.status == "SKIPPED":
                continue
            if name == "inspect.tablets":
                self.assertEqual(last.duration, "continuous")
            else:
                self.assertRegex(last.duration, r"^(\d+\.\ds|\d+:\d{2})$", name)
        gate = [s for s in steps if s.name == "approval.batch_release"]
        self.assertTrue(all(s.gate and s.tool == "approval.request" for s in gate))
        self.assertEqual([s.status for s in gate if s.status != "RUNNING"], ["APPROVAL", "SUCCEEDED" if released else "REJECTED"])

        # the raw lines of the finished run: each once, in order, call then its result, ending with the stream
        with op.tool_calls(run.id) as lines:
            got = list(lines)
        self.assertEqual(lines.status, final)
        self.assertEqual([line.id for line in got], list(range(1, len(got) + 1)))
        self.assertEqual([line.kind for line in got[::2]], ["call"] * len(got[::2]))
        self.assertEqual([line.kind for line in got if line.tool == "approval.request"], ["call", "ok"])
        print(f"lines {len(got)}", flush=True)
        # a stream answered 503 (the daemon starting or stopping) is tried again, from where it was
        not_ready = NotReadyOnce()
        with self.operator(urlopen=not_ready).tool_calls(run.id, after=len(got) - 2) as tail:
            self.assertEqual([line.id for line in tail], [len(got) - 1, len(got)])
        self.assertEqual(not_ready.streams, 2)


if __name__ == "__main__":
    unittest.main()
