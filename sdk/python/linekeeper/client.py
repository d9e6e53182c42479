"""The client of linekeeper's REST API: one method per route, the tenant's routes under /v1/tenants/{tenant},
bearer tokens from POST /v1/auth/token.

Given a user and password it signs in when first needed and again when a token has expired (tokens live
minutes); given a token, it uses that one. A token whose expiry the client knows (its own sign-in or renewal)
is renewed before it expires (POST /v1/auth/token/refresh, no password) by the first request made within
``renew_within`` seconds of the expiry, and by the reader of an open event stream at each keep-alive, so a long
``run.stream()`` keeps its session up to the session's maximum age. Every refusal is a :class:`LinekeeperError` with the daemon's
``LK_*`` code, status and detail. Standard library only (urllib).
"""
from __future__ import annotations

import http.client
import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, List, Optional

from .errors import Issue, LinekeeperError
from .events import ToolCallStream
from .run import Run

#: JSON as the daemon answers it.
Json = Dict[str, Any]
#: The transport: ``urllib.request.urlopen``'s signature (request, timeout) → response; a test or a proxy set-up
#: may pass its own.
Urlopen = Callable[[urllib.request.Request, float], Any]


def _default_urlopen(req: urllib.request.Request, timeout: float) -> Any:
    return urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 - the URL is the daemon's, checked http(s)


def _epoch(iso: str) -> float:
    """Epoch seconds of an ISO 8601 UTC time as the daemon writes it (``2026-11-23T06:00:00.000Z``); standard
    library modules beyond the package's few are avoided, so the civil date is counted here.

    :raises ValueError: for another form.
    """
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?Z", iso)
    if m is None:
        raise ValueError(f"not an ISO 8601 UTC time: {iso!r}")
    y, mo, d, h, mi, sec = (int(m.group(i)) for i in range(1, 7))
    # days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil)
    y -= mo <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (mo + (-3 if mo > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days = era * 146097 + doe - 719468
    return days * 86400 + h * 3600 + mi * 60 + sec + (float(m.group(7)) if m.group(7) else 0.0)


class Client:
    """A connection to one daemon, as one person, for one tenant."""

    def __init__(
        self,
        url: str,
        *,
        token: Optional[str] = None,
        user: Optional[str] = None,
        password: Optional[str] = None,
        tenant: Optional[str] = None,
        timeout: float = 30.0,
        poll_interval: float = 1.0,
        urlopen: Optional[Urlopen] = None,
        renew_within: float = 120.0,
        now: Optional[Callable[[], float]] = None,
    ) -> None:
        """:raises LinekeeperError: LK_VALIDATION for a URL that is not http(s), or neither a token nor a user and password."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise LinekeeperError("LK_VALIDATION", f"url: {url!r} is not an http(s) URL", issues=[Issue("url", "not an http(s) URL")])
        if token:
            self._credentials: Optional[Dict[str, str]] = None
        elif user and password:
            self._credentials = {"user": user, "password": password}
        else:
            raise LinekeeperError("LK_VALIDATION", "a client needs a token, or a user and a password", issues=[Issue("token", "required without user and password")])
        self.url = url.rstrip("/")
        self.timeout = timeout
        #: How often ``run.stream()`` reads the run while its event stream is quiet, in seconds.
        self.poll_interval = poll_interval
        self._token = token or None
        self._tenant = tenant
        self._user: Optional[Json] = None
        self._urlopen: Urlopen = urlopen or _default_urlopen
        self._sign_in_lock = threading.Lock()
        self._renew_lock = threading.Lock()
        #: Renew when less than this is left of the token (seconds; at most half its lifetime).
        self.renew_within = renew_within
        #: The time expiries are compared with (epoch seconds): a test's clock.
        self._now: Callable[[], float] = now or time.time
        self._expires_at: Optional[float] = None
        self._issued_at = 0.0

    @property
    def token(self) -> Optional[str]:
        """The bearer token in use (None before the first sign-in)."""
        return self._token

    def _token_is(self, t: Json) -> None:
        self._token = t["token"]
        self._user = t.get("user", self._user)
        self._issued_at = self._now()
        # the expiry on this client's clock: the daemon's lifetime (expiresIn, by its clock) counted from now; a
        # clock ahead of the daemon's by more than a token's lifetime renewed at every request when it compared the
        # daemon's expiresAt with its own time
        expires_in = t.get("expiresIn")
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
            self._expires_at = self._issued_at + float(expires_in)
            return
        try:
            self._expires_at = _epoch(t["expiresAt"])
        except (KeyError, ValueError, TypeError):
            self._expires_at = None

    def _renew_due(self) -> bool:
        if self._expires_at is None or self._token is None:
            return False
        margin = min(self.renew_within, max(0.0, (self._expires_at - self._issued_at) / 2))
        return self._now() >= self._expires_at - margin

    def renew_if_due(self) -> None:
        """Renew the token when it is within ``renew_within`` of its expiry (cheap when it is not)."""
        if self._renew_due():
            self.renew()

    def renew(self) -> None:
        """POST /v1/auth/token/refresh: a new token for the same session, without the password. When the daemon
        refuses (the session reached its maximum age, or was signed out) a client with a password signs in again.

        :raises LinekeeperError: LK_UNAUTHENTICATED when the session cannot be renewed and there is no password.
        """
        with self._renew_lock:
            if self._token is None:
                self.sign_in()
                return
            try:
                resp = self._send("POST", "/v1/auth/token/refresh", auth=False, headers={"Authorization": f"Bearer {self._token}"})
                try:
                    self._token_is(json.loads(resp.read().decode("utf-8")))
                finally:
                    resp.close()
            except LinekeeperError as err:
                if err.code != "LK_UNAUTHENTICATED" or self._credentials is None:
                    raise
                self.sign_in()

    @property
    def user(self) -> Optional[Json]:
        """The signed-in person (after :meth:`sign_in`, or the first call that signed in)."""
        return self._user

    def sign_in(self) -> Json:
        """POST /v1/auth/token with the client's user and password.

        :raises LinekeeperError: LK_UNAUTHENTICATED (wrong user or password, or a source that waits after failures), LK_VALIDATION for
            a client made with a token.
        """
        if self._credentials is None:
            raise LinekeeperError("LK_VALIDATION", "this client was given a token, not a user and password to sign in with")
        with self._sign_in_lock:
            t: Json = self._json("POST", "/v1/auth/token", body=self._credentials, auth=False)
            self._token_is(t)
            return t

    # transport -------------------------------------------------------------------------------------------------

    def _send(self, method: str, path: str, *, body: Any = None, query: Optional[Dict[str, Any]] = None, auth: bool = True,
              headers: Optional[Dict[str, str]] = None, timeout: Optional[float] = None) -> Any:
        """One request; the response of a 2xx answer (the caller reads and closes it).

        :raises LinekeeperError: the daemon's problem, LK_API_UNREACHABLE, LK_API_RESPONSE.
        """
        url = self.url + path
        q = {k: str(v) for k, v in (query or {}).items() if v is not None}
        if q:
            url += "?" + urllib.parse.urlencode(q)
        data = json.dumps(body).encode("utf-8") if body is not None else None
        for attempt in (0, 1):
            h = {"Accept": "application/json", **(headers or {})}
            if data is not None:
                h["Content-Type"] = "application/json"
            if auth:
                if self._token is None:
                    self.sign_in()
                elif attempt == 0:
                    self.renew_if_due()
                h["Authorization"] = f"Bearer {self._token}"
            req = urllib.request.Request(url, data=data, method=method, headers=h)
            try:
                return self._urlopen(req, self.timeout if timeout is None else timeout)
            except urllib.error.HTTPError as e:
                err = LinekeeperError.from_problem(e.code, e.read())
                e.close()
                # an expired (or revoked) token: sign in again, once; nothing ran behind a 401
                if attempt == 0 and auth and err.code == "LK_UNAUTHENTICATED" and self._credentials is not None:
                    self.sign_in()
                    continue
                raise err from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                reason = getattr(e, "reason", e)
                raise LinekeeperError("LK_API_UNREACHABLE", f"{method} {path}: {reason}") from e
        raise AssertionError("unreachable")

    def _json(self, method: str, path: str, *, body: Any = None, query: Optional[Dict[str, Any]] = None, auth: bool = True) -> Any:
        resp = self._send(method, path, body=body, query=query, auth=auth)
        try:
            text = resp.read()
        finally:
            resp.close()
        try:
            return json.loads(text.decode("utf-8")) if text else None
        except ValueError as e:
            raise LinekeeperError("LK_API_RESPONSE", f"{method} {path} answered with a body that is not JSON", getattr(resp, "status", 0)) from e

    def _base(self) -> str:
        """The tenant's base path.

        :raises LinekeeperError: LK_VALIDATION when the client has no tenant and the signed-in user works for
            several (or it only has a token).
        """
        tenant = self._tenant
        if tenant is None and self._credentials is not None:
            if self._user is None:
                self.sign_in()
            mine = (self._user or {}).get("tenants") or []
            if len(mine) == 1:
                tenant = mine[0]
        if tenant is None:
            raise LinekeeperError("LK_VALIDATION", "tenant: give the client a tenant (the user has none or several, or the client has only a token)", issues=[Issue("tenant", "required")])
        return "/v1/tenants/" + urllib.parse.quote(tenant, safe="")

    def _tenant_json(self, method: str, path: str, *, body: Any = None, query: Optional[Dict[str, Any]] = None) -> Any:
        return self._json(method, self._base() + path, body=body, query=query)

    def _open_stream(self, run_id: str, after: int, read_timeout: float) -> Any:
        """GET /runs/{id}/stream after line ``after`` (as Last-Event-ID): the open response."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if after > 0:
            headers["Last-Event-ID"] = str(after)
        return self._send("GET", f"{self._base()}/runs/{_q(run_id)}/stream", headers=headers, timeout=read_timeout)

    # routes ----------------------------------------------------------------------------------------------------

    def tenant(self) -> str:
        """The tenant this client calls."""
        return urllib.parse.unquote(self._base()[len("/v1/tenants/"):])

    def health(self) -> Json:
        """GET /healthz: the daemon answers (no sign-in)."""
        return self._json("GET", "/healthz", auth=False)

    def start_run(self, request: str, autonomy: Optional[str] = None) -> Run:
        """POST /runs: start a run from a free-text request and the batch record in the MES.

        :raises LinekeeperError: LK_RUN_REQUEST_INVALID, LK_RUN_REQUEST_LOOSENS, LK_LINE_BUSY, LK_LINE_NOT_READY, LK_BATCH_CLOSED, LK_NOT_FOUND, LK_FORBIDDEN.
        """
        body: Json = {"request": request}
        if autonomy is not None:
            body["autonomy"] = autonomy
        record = self._tenant_json("POST", "/runs", body=body)
        return Run(self, record["id"], record)

    def list_runs(self, limit: Optional[int] = None, cursor: Optional[str] = None) -> Json:
        """GET /runs: the tenant's runs, newest first, one page (``items``, ``next``)."""
        return self._tenant_json("GET", "/runs", query={"limit": limit, "cursor": cursor})

    def get_run(self, run_id: str) -> Json:
        """GET /runs/{id}: steps with statuses and durations, the approval gate. :raises LinekeeperError: LK_NOT_FOUND."""
        return self._tenant_json("GET", f"/runs/{_q(run_id)}")

    def run(self, run_id: str) -> Run:
        """A handle on a run by id (nothing is read until asked), e.g. for a QA reviewer's client to sign its gate."""
        return Run(self, run_id)

    def genealogy(self, run_id: str) -> Json:
        """GET /runs/{id}/genealogy."""
        return self._tenant_json("GET", f"/runs/{_q(run_id)}/genealogy")

    def tool_calls(self, run_id: str, after: int = 0) -> ToolCallStream:
        """GET /runs/{id}/stream: the run's tool-call lines as they are logged, resumed after a dropped connection."""
        return ToolCallStream(self, run_id, after)

    def approvals(self) -> Json:
        """GET /approvals: batch releases at the gate and setpoint writes waiting for a person."""
        return self._tenant_json("GET", "/approvals")

    def approve(self, approval_id: str, decision: str, meaning: str, password: str, comment: Optional[str] = None) -> Json:
        """POST /approvals/{id}: sign as the signed-in QA reviewer, re-authenticated with the password.

        ``meaning`` is one of the site's release meanings for the decision (GET /signature-meanings: its id, or its
        text filled for the batch); ``comment`` is free text beside it.

        :raises LinekeeperError: LK_MEANING_NOT_ALLOWED (not on the site's list: nothing signed, the password not
            checked), LK_REAUTH_FAILED (nothing signed), LK_APPROVAL_FORBIDDEN, LK_APPROVAL_DECIDED, LK_FORBIDDEN,
            LK_SPEC_FAILED (the batch failed a specification: only a rejection), LK_SPEC_CHANGED (new results since
            the gate: review the table again), LK_EXCEPTIONS_OPEN.
        """
        body = {"decision": decision, "meaning": meaning, "password": password}
        if comment is not None:
            body["comment"] = comment
        return self._tenant_json("POST", f"/approvals/{_q(approval_id)}", body=body)

    def moves(self) -> List[Json]:
        """The setpoint moves waiting for a person (GET /approvals, kind setpoint_write): whom, what, since when."""
        return [a for a in self.approvals()["items"] if a.get("kind") == "setpoint_write"]

    def decide_move(self, move_id: str, decision: str, meaning: str, password: str, record_hash: str, comment: Optional[str] = None) -> Json:
        """POST /approvals/{id} for a waiting move, signed by the signed-in person and bound to the vector hash seen.

        :raises LinekeeperError: LK_MOVE_WITHDRAWN (superseded, or its step or run ended: nothing signed),
            LK_MEANING_NOT_ALLOWED, LK_APPROVAL_STALE, LK_APPROVAL_FORBIDDEN, LK_REAUTH_FAILED, LK_NOT_FOUND.
        """
        body = {"decision": decision, "meaning": meaning, "password": password, "recordHash": record_hash}
        if comment is not None:
            body["comment"] = comment
        return self._tenant_json("POST", f"/approvals/{_q(move_id)}", body=body)

    def signature_meanings(self, purpose: Optional[str] = None) -> Json:
        """GET /signature-meanings: the site's controlled list of signature meanings (all, or those for one purpose)."""
        return self._tenant_json("GET", "/signature-meanings", query={"for": purpose} if purpose else None)

    def escalations(self) -> Json:
        """GET /arbitration/escalations: deadlocks waiting for a person; each holds its setpoint until one decides."""
        return self._tenant_json("GET", "/arbitration/escalations")

    def decide_escalation(self, setpoint: str, choose: str, reason: str) -> Json:
        """POST /arbitration/escalations/{setpoint}: decide a deadlock with a reason (audited with who decided).

        :raises LinekeeperError: LK_NOT_FOUND (none pending), LK_VALIDATION (not a side, no reason), LK_FORBIDDEN.
        """
        return self._tenant_json("POST", f"/arbitration/escalations/{_q(setpoint)}", body={"choose": choose, "reason": reason})

    def exceptions(self, run_id: str) -> Json:
        """GET /runs/{id}/exceptions: the run's exceptions with their evidence and status, and its specification table."""
        return self._tenant_json("GET", f"/runs/{_q(run_id)}/exceptions")

    def close_exception(self, exception_id: str, comment: str, password: str, deviation: Optional[str] = None) -> Json:
        """POST /exceptions/{id}/close: close an exception with a comment, re-authenticated with the password (a
        signature for a critical or major one, which only a QA reviewer closes).

        :raises LinekeeperError: LK_REAUTH_FAILED (nothing closed), LK_APPROVAL_FORBIDDEN, LK_EXCEPTION_CLOSED, LK_NOT_FOUND.
        """
        body: Dict[str, Any] = {"comment": comment, "password": password}
        if deviation is not None:
            body["deviation"] = deviation
        return self._tenant_json("POST", f"/exceptions/{_q(exception_id)}/close", body=body)

    def resume_run(self, run_id: str, reason: str) -> Json:
        """POST /runs/{id}/resume: resume a HELD or INTERRUPTED run as the signed-in process engineer or QA reviewer;
        the step that stopped runs again from its start (fresh readings and decisions, no write replayed).

        :raises LinekeeperError: LK_RUN_STATE, LK_FORBIDDEN, LK_APPROVAL_FORBIDDEN, LK_VALIDATION, LK_NOT_FOUND.
        """
        return self._tenant_json("POST", f"/runs/{_q(run_id)}/resume", body={"reason": reason})

    def abort_run(self, run_id: str, reason: str, password: Optional[str] = None) -> Json:
        """POST /runs/{id}/abort: abort a run that is not final, signed with the password: the line goes to its last
        known-good recipe (each PLC's read-back in ``reverted``), a pending approval is withdrawn, the run ends
        ABORTED with a "not a release" package.

        :raises LinekeeperError: LK_REAUTH_FAILED, LK_REAUTH_REQUIRED, LK_RUN_STATE, LK_FORBIDDEN, LK_APPROVAL_FORBIDDEN, LK_NOT_FOUND.
        """
        body: Json = {"reason": reason}
        if password is not None:
            body["password"] = password
        return self._tenant_json("POST", f"/runs/{_q(run_id)}/abort", body=body)

    def reassign_reviewer(self, run_id: str, to: str, reason: str, password: Optional[str] = None) -> Json:
        """POST /runs/{id}/reassign: name another QA reviewer for a run that is not final, signed with the password;
        the new reviewer must be an active user holding a QA role for the tenant.

        :raises LinekeeperError: LK_REVIEWER_INVALID, LK_REAUTH_FAILED, LK_RUN_STATE, LK_FORBIDDEN, LK_APPROVAL_FORBIDDEN, LK_NOT_FOUND.
        """
        body: Json = {"to": to, "reason": reason}
        if password is not None:
            body["password"] = password
        return self._tenant_json("POST", f"/runs/{_q(run_id)}/reassign", body=body)

    def models(self) -> Json:
        """GET /models: cards, validation status, pinned sites."""
        return self._tenant_json("GET", "/models")

    def promote_model(self, model_id: str, to: str, change_ref: str, reason: str, password: Optional[str] = None) -> Json:
        """POST /models/{id}/promote: one step forward (draft → shadow → validated) as the signed-in person, signed
        with the password (an SSO client's token must come from a fresh provider sign-in instead).

        :raises LinekeeperError: LK_NOT_FOUND, LK_MODEL_CHANGE, LK_MODEL_TRANSITION, LK_REAUTH_REQUIRED, LK_REAUTH_FAILED,
            LK_MODEL_GATE_FAILED.
        """
        body: Json = {"to": to, "changeRef": change_ref, "reason": reason}
        if password is not None:
            body["password"] = password
        return self._tenant_json("POST", f"/models/{_q(model_id)}/promote", body=body)

    def retire_model(self, model_id: str, change_ref: str, reason: str, password: Optional[str] = None) -> Json:
        """POST /models/{id}/retire: take a model out of use (final), signed as :meth:`promote_model`."""
        body: Json = {"changeRef": change_ref, "reason": reason}
        if password is not None:
            body["password"] = password
        return self._tenant_json("POST", f"/models/{_q(model_id)}/retire", body=body)

    def simulate(self, candidates: int, horizon: str, seed: Optional[int] = None) -> Json:
        """POST /twin/simulate: rehearse candidates on the tenant's validated twin (audited)."""
        body: Json = {"candidates": candidates, "horizon": horizon}
        if seed is not None:
            body["seed"] = seed
        return self._tenant_json("POST", "/twin/simulate", body=body)

    def attendance(self) -> Json:
        """POST /attendance: the signed-in operator's presence heartbeat (R5); send it while attending a run."""
        return self._tenant_json("POST", "/attendance", body={})

    def line(self) -> Json:
        """GET /line: equipment, connections, PLC supervisor state."""
        return self._tenant_json("GET", "/line")

    def line_readiness(self) -> Json:
        """GET /line/readiness: is the line ready for a run (``ready``), and every reason it is not (``reasons``:
        ``code``, ``subject``, ``message``) — what start_run refuses with LK_LINE_NOT_READY."""
        return self._tenant_json("GET", "/line/readiness")

    def rearm(self, unit: str, *, reason: str) -> Json:
        """POST /line/equipment/{unit}/rearm: re-arm a LOST PLC as the signed-in process engineer, with a reason (audited).

        :raises LinekeeperError: LK_FORBIDDEN, LK_NOT_FOUND, LK_CONFLICT (ATTENDED already), LK_WRITE_FAILED (the PLC refused: no heartbeat).
        """
        return self._tenant_json("POST", f"/line/equipment/{urllib.parse.quote(unit, safe='')}/rearm", body={"reason": reason})

    def audit(self, *, batch: Optional[str] = None, run: Optional[str] = None, agent: Optional[str] = None, tool: Optional[str] = None,
              setpoint: Optional[str] = None, reviewer: Optional[str] = None, actor: Optional[str] = None, kind: Optional[str] = None,
              from_: Optional[str] = None, to: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None) -> Json:
        """GET /audit: the tenant's audit trail by batch, run, agent, tool, reviewer, time (ISO 8601); one page."""
        query = {"batch": batch, "run": run, "agent": agent, "tool": tool, "setpoint": setpoint, "reviewer": reviewer, "actor": actor,
                 "kind": kind, "from": from_, "to": to, "limit": limit, "cursor": cursor}
        return self._tenant_json("GET", "/audit", query=query)

    def design_space(self, product: str, tooling: str) -> Json:
        """GET /design-space: the approved limits of one of the tenant's product × tooling families. :raises LinekeeperError: LK_NOT_FOUND."""
        return self._tenant_json("GET", "/design-space", query={"product": product, "tooling": tooling})


def _q(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


_default: Optional[Client] = None


def set_default_client(client: Optional[Client]) -> None:
    """The client ``DesignSpace.approved(...)`` and ``agent.start(...)`` use when not given one (None forgets it)."""
    global _default
    _default = client


def client_of(client: Optional[Client]) -> Client:
    """``client``, else the default one. :raises LinekeeperError: LK_VALIDATION when there is neither."""
    c = client if client is not None else _default
    if c is None:
        raise LinekeeperError("LK_VALIDATION", "client: pass client=... or call set_default_client(client) first", issues=[Issue("client", "required")])
    return c
