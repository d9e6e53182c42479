"""The SDK's one error type.

Every refusal of the daemon is an RFC 9457 problem+json body with a stable ``LK_*`` code; the SDK raises it as
a :class:`LinekeeperError` with that code, the HTTP status and the detail, so callers branch on ``err.code``,
never on a message. What the SDK finds itself (a declaration that does not validate, a daemon it cannot
reach, an answer that is not the API's) carries a code of the same registry.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: HTTP status of the codes the SDK raises itself (as the daemon's registry, src/errors.ts, has them).
_OWN_STATUS: Dict[str, int] = {"LK_VALIDATION": 400, "LK_RUN_STATE": 409, "LK_API_UNREACHABLE": 503, "LK_API_RESPONSE": 502}


@dataclass(frozen=True)
class Issue:
    """One invalid field of a refused request or declaration: ``body.autonomy``, ``tags[1]``."""

    path: str
    message: str


class LinekeeperError(Exception):
    """A refusal of the daemon, or an error the SDK found before or after asking it."""

    code: str
    status: int
    detail: str
    title: Optional[str]
    type: Optional[str]
    instance: Optional[str]
    issues: Tuple[Issue, ...]

    def __init__(
        self,
        code: str,
        detail: str,
        status: Optional[int] = None,
        *,
        title: Optional[str] = None,
        type: Optional[str] = None,
        instance: Optional[str] = None,
        issues: Sequence[Issue] = (),
    ) -> None:
        super().__init__(f"{detail} [{code}]")
        self.code = code
        self.status = status if status is not None else _OWN_STATUS.get(code, 0)
        self.detail = detail
        self.title = title
        self.type = type if type is not None else f"urn:linekeeper:error:{code}"
        self.instance = instance
        self.issues = tuple(issues)

    @classmethod
    def from_problem(cls, status: int, body: bytes) -> "LinekeeperError":
        """The error of a non-2xx answer: its problem+json body when it is one, else LK_API_RESPONSE."""
        try:
            p: Any = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, ValueError):
            p = None
        if isinstance(p, dict) and isinstance(p.get("code"), str) and isinstance(p.get("detail"), str):
            raw = p.get("issues")
            issues: List[Issue] = []
            if isinstance(raw, list):
                issues = [Issue(str(i["path"]), str(i["message"])) for i in raw if isinstance(i, dict) and "path" in i and "message" in i]
            return cls(
                p["code"],
                p["detail"],
                status,
                title=p.get("title") if isinstance(p.get("title"), str) else None,
                type=p.get("type") if isinstance(p.get("type"), str) else None,
                instance=p.get("instance") if isinstance(p.get("instance"), str) else None,
                issues=issues,
            )
        text = body[:120].decode("utf-8", "replace") if body else "empty"
        return cls("LK_API_RESPONSE", f"HTTP {status} without a problem body ({text})", status)


def validation_error(what: str, issues: Sequence[Issue]) -> LinekeeperError:
    """LK_VALIDATION naming every bad field of a declaration."""
    listed = "; ".join(f"{i.path}: {i.message}" for i in issues)
    return LinekeeperError("LK_VALIDATION", f"{what} is invalid: {listed}", issues=issues)
