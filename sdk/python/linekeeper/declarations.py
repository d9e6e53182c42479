"""Agents and tools declared in code (step 1 of the spec's development workflow: "define tool and agent in
code, bound to the design space").

Declarations are validated when made — every bad field named in one :class:`LinekeeperError` LK_VALIDATION —
and frozen. The limits come from the daemon (``DesignSpace.approved``), never from a copy in the
declaration, and a tool that writes may only name setpoints that design space approves. Starting an agent
composes the free-text run request the daemon's grammar reads and POSTs it; the daemon's policy engine still
decides every move at call time (a level declared here can only cap, never raise, what the site allows).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .client import client_of
from .errors import Issue, validation_error

if TYPE_CHECKING:
    from .client import Client
    from .run import Run

AUTONOMY: Tuple[str, ...] = ("L0", "L1", "L2", "L3")
_DOTTED = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
#: ``<equipment>.<Tag>``, e.g. press.MainForce.
_TAG = re.compile(r"^[a-z][a-z0-9-]*\.[A-Z][A-Za-z0-9]*$")
_AGENT_ID = re.compile(r"^agent\.[a-z][a-z0-9_]*$")
#: What the run-request grammar reads as a batch id and a line; nothing else may reach the composed text.
_BATCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{1,31}$")
_LINE = re.compile(r"^line-[a-z0-9]*[0-9][a-z0-9]*$")
#: Argument types a tool's schema may name.
_TYPES = (str, int, float, bool, dict, list)


def _key(k: str) -> str:
    """``.value`` for a field name, ``["press.MainForce"]`` for a data key (a tag id)."""
    return f".{k}" if re.match(r"^[a-z_][a-z0-9_]*$", k) else f"[{json.dumps(k)}]"


def _is(value: Any, t: type) -> bool:
    """``isinstance`` as JSON means it: a bool is no number, an int is a float."""
    if isinstance(value, bool):
        return t is bool
    if t is float:
        return isinstance(value, (int, float))
    return isinstance(value, t)


@dataclass(frozen=True)
class Limit:
    """One approved limit, in the setpoint's own (tag) unit (a UCUM code)."""

    min: float
    max: float
    unit: str
    max_step: float
    max_rate_per_min: float


@dataclass(frozen=True)
class DesignSpace:
    """The approved design space of one product family × tooling family, as the daemon's policy bundle holds it."""

    product: str
    tooling: str
    #: The validation report that approved it.
    approved_by: str
    #: SHA-256 of the policy bundle the limits were read from.
    bundle_version: str
    setpoints: Mapping[str, Limit]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "DesignSpace":
        limits = {
            tag: Limit(min=float(v["min"]), max=float(v["max"]), unit=str(v["unit"]), max_step=float(v["maxStep"]), max_rate_per_min=float(v["maxRatePerMin"]))
            for tag, v in d["setpoints"].items()
        }
        return cls(product=str(d["product"]), tooling=str(d["tooling"]), approved_by=str(d["approvedBy"]), bundle_version=str(d["bundleVersion"]),
                   setpoints=MappingProxyType(limits))

    @classmethod
    def approved(cls, product: str, tooling: str, client: Optional["Client"] = None) -> "DesignSpace":
        """``DesignSpace.approved(product, tooling)``: the approved limits for that pair, read from the daemon.

        :raises LinekeeperError: LK_NOT_FOUND (no approved design space for the pair, or another tenant's
            product), LK_POLICY_BUNDLE (no bundle in force), LK_VALIDATION (no client).
        """
        return cls.from_json(client_of(client).design_space(product, tooling))

    def limit(self, tag: str) -> Optional[Limit]:
        """The limit of a setpoint, or None when the design space does not approve it."""
        return self.setpoints.get(tag)

    def contains(self, tag: str, value: float) -> bool:
        """Whether ``value``, in the setpoint's own unit, is inside the approved range (a setpoint it lacks: False)."""
        lim = self.limit(tag)
        return lim is not None and math.isfinite(value) and lim.min <= value <= lim.max

    def __str__(self) -> str:
        return f"{self.product} × {self.tooling}"


@dataclass(frozen=True)
class Tool:
    """A tool an agent uses: its dotted name, the tags it touches, the units of those tags, its argument schema
    (name → type), the design space it is bound to, whether it writes, and the autonomy level it needs.

    :raises LinekeeperError: LK_VALIDATION naming every bad field: a name or tag of the wrong form, a writing
        tool at L0, a unit for a tag it does not name or unlike the approved limit's, a written tag outside the
        design space it is bound to, a schema type it cannot check.
    """

    name: str
    read_only: bool
    autonomy_needed: str
    tags: Sequence[str] = ()
    schema: Optional[Mapping[str, type]] = None
    units: Mapping[str, str] = field(default_factory=dict)
    limits: Optional[DesignSpace] = None

    def __post_init__(self) -> None:
        issues: List[Issue] = []
        if not isinstance(self.name, str) or not _DOTTED.match(self.name):
            issues.append(Issue("name", "a tool name is dotted lower-case words, e.g. press.write_setpoint"))
        if not isinstance(self.read_only, bool):
            issues.append(Issue("read_only", "True or False"))
        if self.autonomy_needed not in AUTONOMY:
            issues.append(Issue("autonomy_needed", f"one of {', '.join(AUTONOMY)}"))
        elif self.read_only is False and self.autonomy_needed == "L0":
            issues.append(Issue("autonomy_needed", "a tool that writes needs L1 or above (L0 writes nothing)"))
        tags = tuple(self.tags) if isinstance(self.tags, (list, tuple)) else None
        if tags is None:
            issues.append(Issue("tags", "a list of tags"))
            tags = ()
        malformed = {i for i, tag in enumerate(tags) if not isinstance(tag, str) or not _TAG.match(tag)}
        issues.extend(Issue(f"tags[{i}]", "a tag is <equipment>.<Tag>, e.g. press.MainForce") for i in sorted(malformed))
        if len(set(tags)) != len(tags):
            issues.append(Issue("tags", "a tag is named twice"))
        units = dict(self.units) if isinstance(self.units, Mapping) else {}
        for tag, unit in units.items():
            if tag not in tags:
                issues.append(Issue(f"units{_key(tag)}", f"{tag} is not one of the tool's tags"))
            elif not isinstance(unit, str) or not unit:
                issues.append(Issue(f"units{_key(tag)}", "a UCUM code"))
        schema = dict(self.schema) if isinstance(self.schema, Mapping) else None
        if self.schema is not None and schema is None:
            issues.append(Issue("schema", "a mapping of argument name to type"))
        for arg, t in (schema or {}).items():
            if t not in _TYPES:
                issues.append(Issue(f"schema{_key(str(arg))}", "one of str, int, float, bool, dict, list"))
        if self.limits is not None and not isinstance(self.limits, DesignSpace):
            issues.append(Issue("limits", "a DesignSpace (DesignSpace.approved(product, tooling))"))
        elif self.limits is not None:
            for i, tag in enumerate(tags):
                if i in malformed:
                    continue
                lim = self.limits.limit(tag)
                if lim is None and self.read_only is False:
                    issues.append(Issue(f"tags[{i}]", f"{tag} is not approved in the design space {self.limits}"))
                if lim is not None and tag in units and units[tag] != lim.unit:
                    issues.append(Issue(f"units{_key(tag)}", f"{units[tag]} is not the unit of the approved limit ({lim.unit})"))
        if issues:
            raise validation_error(f"tool {self.name}" if isinstance(self.name, str) else "tool", issues)
        object.__setattr__(self, "tags", tags)
        object.__setattr__(self, "units", MappingProxyType(units))
        object.__setattr__(self, "schema", MappingProxyType(schema) if schema is not None else None)

    def check(self, args: Mapping[str, Any]) -> Dict[str, Any]:
        """The arguments, checked against the tool's schema (every argument, no other; as given without one).

        :raises LinekeeperError: LK_VALIDATION naming each bad argument.
        """
        if self.schema is None:
            return dict(args)
        if not isinstance(args, Mapping):
            raise validation_error(f"the arguments of {self.name}", [Issue("(root)", "a mapping of arguments")])
        issues: List[Issue] = []
        for k, t in self.schema.items():
            if k not in args:
                issues.append(Issue(k, "required"))
                continue
            if not _is(args[k], t):
                issues.append(Issue(k, f"expected {t.__name__}, got {type(args[k]).__name__}"))
        issues.extend(Issue(str(k), f'unknown argument "{k}"') for k in args if k not in self.schema)
        if issues:
            raise validation_error(f"the arguments of {self.name}", issues)
        return dict(args)


@dataclass(frozen=True)
class Agent:
    """An agent: ``agent.<role>``, a goal the daemon's run-request grammar reads, its tools, its autonomy level,
    ``verify="twin"`` (rehearse on the twin before every proposal) and ``audit="part11"`` (every call to the
    Part 11 audit trail), the only values the spec gives.

    :raises LinekeeperError: LK_VALIDATION naming every bad field.
    """

    id: str
    goal: str
    autonomy: str
    verify: str
    audit: str
    tools: Sequence[Tool] = ()

    def __post_init__(self) -> None:
        issues: List[Issue] = []
        if not isinstance(self.id, str) or not _AGENT_ID.match(self.id):
            issues.append(Issue("id", "an agent id is agent.<role>, e.g. agent.compress_fill"))
        if not isinstance(self.goal, str) or not self.goal.strip() or len(self.goal) > 2000:
            issues.append(Issue("goal", "a goal of 1 to 2000 characters is required"))
        if self.autonomy not in AUTONOMY:
            issues.append(Issue("autonomy", f"one of {', '.join(AUTONOMY)}"))
        if self.verify != "twin":
            issues.append(Issue("verify", 'verify is "twin" (rehearse on the twin before every proposal)'))
        if self.audit != "part11":
            issues.append(Issue("audit", 'audit is "part11" (every call to the Part 11 audit trail)'))
        tools = tuple(self.tools) if isinstance(self.tools, (list, tuple)) else None
        if tools is None:
            issues.append(Issue("tools", "a list of Tool declarations"))
            tools = ()
        names = set()
        for i, t in enumerate(tools):
            if not isinstance(t, Tool):
                issues.append(Issue(f"tools[{i}]", "a Tool(...) declaration"))
            elif t.name in names:
                issues.append(Issue(f"tools[{i}]", f"tool {t.name} is declared twice"))
            else:
                names.add(t.name)
        if issues:
            raise validation_error(f"agent {self.id}" if isinstance(self.id, str) else "agent", issues)
        object.__setattr__(self, "goal", self.goal.strip())
        object.__setattr__(self, "tools", tools)

    def request(self, line: str, batch: str, goal: Optional[str] = None) -> str:
        """The free-text run request ``start`` sends. :raises LinekeeperError: LK_VALIDATION for a line, batch or goal of the wrong form."""
        return self._compose(line, batch, goal, None)[0]

    def _compose(self, line: str, batch: str, goal: Optional[str], autonomy: Optional[str]) -> Tuple[str, str]:
        g = (goal if goal is not None else self.goal)
        level = autonomy if autonomy is not None else self.autonomy
        issues: List[Issue] = []
        if not isinstance(line, str) or not _LINE.match(line):
            issues.append(Issue("line", "a line is line-<n>, e.g. line-3"))
        if not isinstance(batch, str) or not _BATCH.match(batch):
            issues.append(Issue("batch", "a batch id is 2–32 letters, digits and hyphens, e.g. B-1042"))
        if not isinstance(g, str) or not g.strip() or len(g) > 2000 or "\n" in g or "\r" in g:
            issues.append(Issue("goal", "a goal is one line of 1 to 2000 characters"))
        if level not in AUTONOMY:
            issues.append(Issue("autonomy", f"one of {', '.join(AUTONOMY)}"))
        if issues:
            raise validation_error(f"the start of {self.id}", issues)
        return f"run batch {batch} on {line}, {g.strip()}", level

    def start(self, line: str, batch: str, goal: Optional[str] = None, autonomy: Optional[str] = None, client: Optional["Client"] = None) -> "Run":
        """Start a run of ``batch`` on ``line`` toward the agent's goal (POST /runs); follow it with ``run.stream()``.

        ``autonomy`` (default the agent's) caps every agent of the run; it never raises a level.

        :raises LinekeeperError: LK_VALIDATION (line, batch, goal, autonomy, no client), and what the daemon
            refuses: LK_RUN_REQUEST_INVALID, LK_RUN_REQUEST_LOOSENS, LK_LINE_BUSY, LK_LINE_NOT_READY, LK_BATCH_CLOSED, LK_NOT_FOUND, LK_FORBIDDEN.
        """
        request, level = self._compose(line, batch, goal, autonomy)
        return client_of(client).start_run(request, level)
