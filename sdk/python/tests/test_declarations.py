"""The Python SDK without a daemon: Tool and Agent declarations validated with every bad field named
(LK_VALIDATION), a tool bound to a design space, the run request an agent composes (only the grammar's forms
of line and batch reach it), the event-stream parser, and problem bodies as LinekeeperError."""
import pathlib
import sys
import unittest
from typing import Callable, List

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # sdk/python: the package under test

from linekeeper import Agent, DesignSpace, LinekeeperError, SseParser, Tool, set_default_client  # noqa: E402

LIMITS = DesignSpace.from_json({
    "product": "ir-family-a", "tooling": "round-10mm-ff", "approvedBy": "VR-L3-2025-017 §4.2", "bundleVersion": "a" * 64,
    "setpoints": {
        "press.MainForce": {"min": 8, "max": 18, "unit": "kN", "maxStep": 1.5, "maxRatePerMin": 3},
        "press.PreForce": {"min": 1.5, "max": 4, "unit": "kN", "maxStep": 0.5, "maxRatePerMin": 1},
    },
})
GOAL = "keep weight and hardness on target, capping risk under 1.5%"


def issues(fn: Callable[[], object]) -> List[str]:
    """The sorted paths of the LK_VALIDATION issues ``fn`` raises (anything else fails the test)."""
    try:
        fn()
    except LinekeeperError as err:
        if err.code != "LK_VALIDATION":
            raise
        return sorted(i.path for i in err.issues)
    return []


class ToolTest(unittest.TestCase):
    def base(self, **over: object) -> Tool:
        spec = dict(name="press.write_setpoint", tags=["press.MainForce"], limits=LIMITS, read_only=False, autonomy_needed="L2")
        spec.update(over)
        return Tool(**spec)  # type: ignore[arg-type]

    def test_is_frozen_bound_and_checks_arguments(self) -> None:
        t = self.base(schema={"setpoint": str, "value": float}, units={"press.MainForce": "kN"})
        self.assertEqual(t.tags, ("press.MainForce",))
        self.assertEqual(t.limits.limit("press.MainForce").unit, "kN")  # type: ignore[union-attr]
        with self.assertRaises(Exception):
            t.name = "other"  # type: ignore[misc]
        self.assertEqual(t.check({"setpoint": "press.MainForce", "value": 12}), {"setpoint": "press.MainForce", "value": 12})
        self.assertEqual(issues(lambda: t.check({"setpoint": "press.MainForce", "value": True, "by": "x"})), ["by", "value"])
        self.assertEqual(issues(lambda: t.check({"value": 12.5})), ["setpoint"])
        self.assertEqual(self.base().check({"anything": 1}), {"anything": 1})

    def test_refuses_naming_each_field(self) -> None:
        self.assertEqual(issues(lambda: self.base(tags=["press.MainForce", "press.Bogus"])), ["tags[1]"])
        self.assertEqual(issues(lambda: self.base(units={"press.MainForce": "N"})), ['units["press.MainForce"]'])
        self.assertEqual(issues(lambda: self.base(units={"press.PreForce": "kN"})), ['units["press.PreForce"]'])
        self.assertEqual(issues(lambda: self.base(autonomy_needed="L0")), ["autonomy_needed"])
        self.assertEqual(issues(lambda: self.base(tags=["press.MainForce", "press.MainForce"])), ["tags"])
        self.assertEqual(issues(lambda: self.base(name="Press", tags=["MainForce"], autonomy_needed="L5")), ["autonomy_needed", "name", "tags[0]"])
        self.assertEqual(issues(lambda: self.base(limits={"setpoints": {}})), ["limits"])
        self.assertEqual(issues(lambda: self.base(schema={"value": complex})), ["schema.value"])
        # a read-only tool may read what the design space does not limit
        self.assertEqual(issues(lambda: self.base(name="press.read_force_curve", tags=["press.EjectionForce"], read_only=True, autonomy_needed="L0")), [])

    def test_design_space_answers_whether_a_value_is_inside(self) -> None:
        self.assertEqual([LIMITS.contains("press.MainForce", 8), LIMITS.contains("press.MainForce", 18.01), LIMITS.contains("press.MainForce", float("nan")),
                          LIMITS.contains("press.Bogus", 1)], [True, False, False, False])
        self.assertEqual(str(LIMITS), "ir-family-a × round-10mm-ff")
        set_default_client(None)
        self.assertEqual(issues(lambda: DesignSpace.approved("ir-family-a", "round-10mm-ff")), ["client"])


class AgentTest(unittest.TestCase):
    press = Tool(name="press.write_setpoint", tags=["press.MainForce"], limits=LIMITS, read_only=False, autonomy_needed="L2")

    def agent(self, **over: object) -> Agent:
        spec = dict(id="agent.compress_fill", goal=GOAL, tools=[self.press], autonomy="L2", verify="twin", audit="part11")
        spec.update(over)
        return Agent(**spec)  # type: ignore[arg-type]

    def test_declares_and_composes_the_request(self) -> None:
        a = self.agent()
        self.assertEqual((a.id, a.autonomy, a.verify, a.audit, a.tools), ("agent.compress_fill", "L2", "twin", "part11", (self.press,)))
        self.assertEqual(a.request("line-3", "B-1042"), f"run batch B-1042 on line-3, {GOAL}")
        self.assertEqual(a.request("line-3", "B-1042", "keep weight on target"), "run batch B-1042 on line-3, keep weight on target")

    def test_refuses_naming_each_field(self) -> None:
        self.assertEqual(issues(lambda: self.agent(id="compress_fill", autonomy="L4", verify="none", audit="gmp")), ["audit", "autonomy", "id", "verify"])
        self.assertEqual(issues(lambda: self.agent(goal="  ")), ["goal"])
        self.assertEqual(issues(lambda: self.agent(tools=[{"name": "press.write_setpoint"}])), ["tools[0]"])
        self.assertEqual(issues(lambda: self.agent(tools=[self.press, self.press])), ["tools[1]"])
        with self.assertRaises(TypeError):
            self.agent(model="x")

    def test_lets_only_a_line_and_a_batch_id_into_the_request_and_needs_a_client(self) -> None:
        a = self.agent()
        self.assertEqual(issues(lambda: a.request("line-3, at L3", "B-1042")), ["line"])
        self.assertEqual(issues(lambda: a.request("line-3", "B-1042; capping risk under 9%")), ["batch"])
        self.assertEqual(issues(lambda: a.request("line-3", "B-1042", "keep weight\nat L3")), ["goal"])
        self.assertEqual(issues(lambda: a.start("line-3", "B-1042", autonomy="L7")), ["autonomy"])
        set_default_client(None)
        self.assertEqual(issues(lambda: a.start("line-3", "B-1042")), ["client"])


class SseParserTest(unittest.TestCase):
    def test_reads_events_comments_retry_and_line_breaks(self) -> None:
        p = SseParser()
        got = [p.feed(line) for line in [b"retry: 2000\n", b"\n", b": keep-alive\n", b"\n", b"id: 7\r\n", b"event: call\n", b'data: {"a":\n', b"data:1}\n", b"\n"]]
        events = [e for e in got if e is not None]
        self.assertEqual(p.retry_ms, 2000)
        self.assertEqual(len(events), 1)
        self.assertEqual((events[0].id, events[0].event, events[0].data), ("7", "call", '{"a":\n1}'))
        self.assertEqual(p.feed(b"data: x\n") or p.feed(b"\n"), type(events[0])(event="message", data="x", id="7"))


class ProblemTest(unittest.TestCase):
    def test_a_problem_body_keeps_its_code_status_detail_and_issues(self) -> None:
        body = b'{"type":"urn:linekeeper:error:LK_VALIDATION","title":"Request is invalid","status":400,"detail":"body.x: unknown","code":"LK_VALIDATION","instance":"/v1/x","issues":[{"path":"body.x","message":"unknown field \\"x\\""}]}'
        e = LinekeeperError.from_problem(400, body)
        self.assertEqual((e.code, e.status, e.detail, e.instance, [i.path for i in e.issues]), ("LK_VALIDATION", 400, "body.x: unknown", "/v1/x", ["body.x"]))
        other = LinekeeperError.from_problem(502, b"<html>bad gateway</html>")
        self.assertEqual((other.code, other.status), ("LK_API_RESPONSE", 502))


if __name__ == "__main__":
    unittest.main()
