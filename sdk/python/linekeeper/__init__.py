"""linekeeper — the Python SDK over linekeeper's REST API (standard library only).

    from linekeeper import Agent, Client, DesignSpace, Tool

    lk = Client("http://127.0.0.1:8080", user="o.operator", password="…")
    limits = DesignSpace.approved("ir-family-a", "round-10mm-ff", client=lk)
    press = Tool(name="press.write_setpoint", tags=["press.MainForce"], limits=limits, read_only=False, autonomy_needed="L2")
    agent = Agent(id="agent.compress_fill", goal="keep weight and hardness on target, capping risk under 1.5%",
                  tools=[press], autonomy="L2", verify="twin", audit="part11")
    run = agent.start("line-3", "B-1042", client=lk)
    for step in run.stream():
        print(step.seq, step.name, step.status, step.duration)

Errors are :class:`LinekeeperError` with the daemon's ``LK_*`` code. See docs/sdk.md.
"""
from .client import Client, set_default_client
from .declarations import AUTONOMY, Agent, DesignSpace, Limit, Tool
from .errors import Issue, LinekeeperError
from .events import SseParser, ToolCall, ToolCallStream
from .run import ExceptionMarker, Run, Step

__all__ = [
    "AUTONOMY", "Agent", "Client", "DesignSpace", "ExceptionMarker", "Issue", "Limit", "LinekeeperError", "Run", "SseParser", "Step", "Tool", "ToolCall",
    "ToolCallStream", "set_default_client",
]
__version__ = "0.1.0"
