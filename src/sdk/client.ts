/**
 * The typed client of linekeeper's REST API: one method per route, the tenant's routes under
 * /v1/tenants/{tenant}, bearer tokens from POST /v1/auth/token. Given a user and password it signs in when
 * first needed and again when a token has expired (tokens live minutes); given a token, it uses that one.
 * A token whose expiry the client knows (from its own sign-in or renewal, or `expiresAt` given with a token) is
 * renewed before it expires (POST /v1/auth/token/refresh, no password): on a timer while the process runs, and
 * before any call made within `renewWithinMs` of the expiry, so a long `run.stream()` keeps its session up to
 * the session's maximum age. Every refusal is a {@link LinekeeperError} with the daemon's `LK_*` code, status and detail.
 */
import { LinekeeperError, problemOf, sdkError } from './errors.js';
import { toolCallStream, type Channel, type ToolCallStreamOptions } from './events.js';
import { Run } from './run.js';
import type {
  AbortedRun, ReassignedReviewer, ApprovalList, Attendance, EscalationDecided, EscalationList, MoveDecided, MoveDecision, PendingMove, AuditFilter, AuditPage, TrailReview, TrailReviewView, TrailScope, Autonomy, ClosedException, Decision, DesignSpaceRecord, ExceptionClosure, ExceptionList, Genealogy, Health, Line, LineReadiness, ModelChange, ModelList, RunPage, RunRecord, RunStatus, Signature,
  Rearmed, Simulation, TokenInfo, ToolCallLine, SignedOut, PasswordChanged, AutonomyChange, AutonomyChangeRequest, SignatureMeanings, SignaturePurpose,
} from './types.js';

/** `fetch` or anything with its signature (a proxy agent, a test's transport). */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

interface CommonOptions {
  /** Base URL of the daemon's API, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  /** The tenant whose routes to call; defaults to the signed-in user's tenant when they have exactly one. */
  readonly tenant?: string;
  /** The transport (default: the global fetch). */
  readonly fetch?: FetchLike;
  /** How often `run.stream()` reads the run while its event stream is quiet (ms, default 1000). */
  readonly pollMs?: number;
  /** Renew the token when less than this is left of it (ms; default 2 minutes, at most half its lifetime). */
  readonly renewWithinMs?: number;
  /** The time the renewal compares expiries with (epoch ms; default `Date.now`): a test's clock. */
  readonly now?: () => number;
}
export type ClientOptions =
  | (CommonOptions & { readonly token: string; readonly user?: never; readonly password?: never; /** ISO 8601: when the given token expires (it is then renewed before). */ readonly expiresAt?: string })
  | (CommonOptions & { readonly user: string; readonly password: string; readonly token?: never });

type Method = 'GET' | 'POST' | 'PUT';

export class LinekeeperClient {
  /** The API's base URL, without a trailing slash. */
  readonly url: string;
  readonly pollMs: number;
  readonly #fetch: FetchLike;
  readonly #credentials: { readonly user: string; readonly password: string } | undefined;
  readonly #tenant: string | undefined;
  #token: string | undefined;
  #user: TokenInfo['user'] | undefined;
  #signingIn: Promise<TokenInfo> | undefined;
  #renewing: Promise<TokenInfo> | undefined;
  /** When the token expires and when its lifetime began (epoch ms, by {@link #now}); undefined: not known. */
  #expiresAt: number | undefined;
  #issuedAt = 0;
  #renewTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #renewWithinMs: number;
  readonly #now: () => number;

  /** @throws LinekeeperError LK_VALIDATION for a URL that is not http(s), or neither a token nor a user and password. */
  constructor(o: ClientOptions) {
    let base: URL;
    try {
      base = new URL(o.url);
    } catch (err) {
      throw sdkError('LK_VALIDATION', `url: "${o.url}" is not a URL`, { issues: [{ path: 'url', message: 'not a URL' }], cause: err });
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw sdkError('LK_VALIDATION', `url: ${base.protocol} is not http: or https:`, { issues: [{ path: 'url', message: 'not http(s)' }] });
    this.url = base.href.replace(/\/+$/, '');
    this.#fetch = o.fetch ?? ((url, init) => globalThis.fetch(url, init));
    this.pollMs = o.pollMs ?? 1000;
    this.#tenant = o.tenant;
    this.#renewWithinMs = o.renewWithinMs ?? 120_000;
    this.#now = o.now ?? Date.now;
    if (typeof o.token === 'string' && o.token.length > 0) {
      this.#token = o.token;
      if (typeof o.expiresAt === 'string' && Number.isFinite(Date.parse(o.expiresAt))) this.#tokenIs(o.token, o.expiresAt);
    }
    else if (typeof o.user === 'string' && typeof o.password === 'string') this.#credentials = { user: o.user, password: o.password };
    else throw sdkError('LK_VALIDATION', 'a client needs a token, or a user and a password', { issues: [{ path: 'token', message: 'required without user and password' }] });
  }

  /** The signed-in person (after {@link signIn}, or the first call that signed in). */
  get user(): TokenInfo['user'] | undefined {
    return this.#user;
  }

  /**
   * Sign in with the client's user and password (POST /v1/auth/token); concurrent callers share one sign-in.
   * @throws LinekeeperError LK_UNAUTHENTICATED (wrong user or password, or a source that waits after failures), LK_VALIDATION for a
   *   client made with a token.
   */
  signIn(): Promise<TokenInfo> {
    const creds = this.#credentials;
    if (!creds) return Promise.reject(sdkError('LK_VALIDATION', 'this client was given a token, not a user and password to sign in with'));
    this.#signingIn ??= (async () => {
      try {
        const t = await this.#call<TokenInfo>('POST', '/v1/auth/token', { body: creds, auth: false });
        this.#tokenIs(t.token, t.expiresAt, t.expiresIn);
        this.#user = t.user;
        return t;
      } finally {
        this.#signingIn = undefined;
      }
    })();
    return this.#signingIn;
  }

  /** The bearer token in use (undefined before the first sign-in). */
  get token(): string | undefined {
    return this.#token;
  }

  /**
   * Take a new token and schedule its renewal (the timer never keeps a process alive by itself). The expiry is put on
   * this client's clock: `expiresIn`, the seconds the daemon's answer gave by its own clock, counted from now — a
   * client whose clock is ahead of the daemon's by more than a token's lifetime renewed in a loop when it compared the
   * daemon's `expiresAt` with its own time (each renewal a durable commit and an audit entry on the daemon). A token
   * given with only its `expiresAt` keeps that.
   */
  #tokenIs(token: string, expiresAt: string, expiresIn?: number): void {
    this.#token = token;
    this.#issuedAt = this.#now();
    this.#expiresAt = expiresIn !== undefined ? this.#issuedAt + expiresIn * 1000 : Date.parse(expiresAt);
    if (this.#renewTimer !== undefined) clearTimeout(this.#renewTimer);
    this.#renewTimer = setTimeout(() => {
      this.#renewTimer = undefined;
      // a failure here is met again, and reported, by the next call
      this.renew().catch(() => undefined);
    }, Math.max(0, this.#renewAt() - this.#now()));
    this.#renewTimer.unref?.();
  }

  /** When the token is due for renewal (epoch ms by {@link #now}). */
  #renewAt(): number {
    const lifetime = this.#expiresAt! - this.#issuedAt;
    return this.#expiresAt! - Math.min(this.#renewWithinMs, Math.max(0, lifetime / 2));
  }

  /**
   * Renew the token now (POST /v1/auth/token/refresh, no password); concurrent callers share one renewal. When
   * the daemon refuses (the session reached its maximum age, or was signed out) a client with a password signs
   * in again; one with only a token keeps it and the refusal is thrown.
   * @returns the new token, its expiry and the session's end (for a caller that keeps the token, as the CLI does).
   * @throws LinekeeperError LK_UNAUTHENTICATED (the session cannot be renewed and there is no password), LK_API_UNREACHABLE.
   */
  renew(): Promise<TokenInfo> {
    this.#renewing ??= (async () => {
      try {
        if (this.#token === undefined) return await this.signIn();
        try {
          const t = await this.#call<TokenInfo>('POST', '/v1/auth/token/refresh', { auth: false, token: this.#token });
          this.#tokenIs(t.token, t.expiresAt, t.expiresIn);
          this.#user = t.user;
          return t;
        } catch (err) {
          if (!LinekeeperError.is(err) || err.code !== 'LK_UNAUTHENTICATED' || !this.#credentials) throw err;
          return await this.signIn();
        }
      } finally {
        this.#renewing = undefined;
      }
    })();
    return this.#renewing;
  }

  /** Stop the renewal timer (the client still works; calls renew when they find the token due). */
  close(): void {
    if (this.#renewTimer !== undefined) clearTimeout(this.#renewTimer);
    this.#renewTimer = undefined;
  }

  /**
   * `fetch` with the bearer token; a 401 LK_UNAUTHENTICATED (an expired token) signs in again and retries once
   * when the client has a password. Transport errors are thrown as they are (an abort stays an AbortError).
   * @throws LinekeeperError when signing in again is refused.
   */
  async authorizedFetch(url: string, init: RequestInit): Promise<Response> {
    if (this.#token === undefined) await this.signIn();
    else if (this.#expiresAt !== undefined && this.#now() >= this.#renewAt()) await this.renew();
    const send = (): Promise<Response> => this.#fetch(url, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${this.#token}` } });
    const res = await send();
    if (res.status !== 401 || !this.#credentials) return res;
    const code = await res.clone().json().then((b) => (b as { code?: unknown } | null)?.code, () => undefined);
    if (code !== 'LK_UNAUTHENTICATED') return res;
    await res.body?.cancel();
    await this.signIn();
    return send();
  }

  /** One JSON call. @throws LinekeeperError the daemon's problem, LK_API_UNREACHABLE, LK_API_RESPONSE. */
  async #call<T>(method: Method, path: string, o: { body?: unknown; query?: Record<string, unknown>; auth?: boolean; token?: string; signal?: AbortSignal } = {}): Promise<T> {
    const u = new URL(`${this.url}${path}`);
    for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined && v !== null) u.searchParams.set(k, String(v));
    const init: RequestInit = {
      method,
      headers: { accept: 'application/json', ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(o.token !== undefined ? { authorization: `Bearer ${o.token}` } : {}) },
      ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
      ...(o.signal ? { signal: o.signal } : {}),
    };
    let res: Response;
    try {
      res = o.auth === false ? await this.#fetch(u.href, init) : await this.authorizedFetch(u.href, init);
    } catch (err) {
      if (LinekeeperError.is(err)) throw err;
      throw sdkError('LK_API_UNREACHABLE', `${method} ${u.pathname}: ${(err as Error).message}`, { cause: err });
    }
    if (!res.ok) throw await problemOf(res, `${method} ${u.pathname}`);
    const text = await res.text();
    try {
      return (text.length > 0 ? JSON.parse(text) : undefined) as T;
    } catch (err) {
      throw new LinekeeperError({ code: 'LK_API_RESPONSE', status: res.status, detail: `${method} ${u.pathname} answered ${res.status} with a body that is not JSON`, request: `${method} ${u.pathname}` }, { cause: err });
    }
  }

  /**
   * The tenant's base path. @throws LinekeeperError LK_VALIDATION when the client was given no tenant and the
   *   signed-in user works for several (or it only has a token).
   */
  async #base(): Promise<string> {
    let tenant = this.#tenant;
    if (tenant === undefined && this.#credentials) {
      if (!this.#user) await this.signIn();
      const mine = this.#user?.tenants ?? [];
      if (mine.length === 1) tenant = mine[0];
    }
    if (tenant === undefined) throw sdkError('LK_VALIDATION', 'tenant: give the client a tenant (the user has none or several, or the client has only a token)', { issues: [{ path: 'tenant', message: 'required' }] });
    return `/v1/tenants/${encodeURIComponent(tenant)}`;
  }

  /** The tenant this client calls. */
  async tenant(): Promise<string> {
    return decodeURIComponent((await this.#base()).slice('/v1/tenants/'.length));
  }

  async #tenantCall<T>(method: Method, path: string, o: { body?: unknown; query?: Record<string, unknown>; signal?: AbortSignal } = {}): Promise<T> {
    return this.#call<T>(method, `${await this.#base()}${path}`, o);
  }

  /**
   * POST /v1/auth/logout: end this client's session on the daemon now (its token is refused from then on, its
   * open event streams close); the renewal timer stops.
   * @throws LinekeeperError LK_UNAUTHENTICATED (expired or ended already), LK_API_UNREACHABLE.
   */
  async signOut(): Promise<SignedOut> {
    this.close();
    return this.#call<SignedOut>('POST', '/v1/auth/logout');
  }

  /**
   * POST /v1/auth/password: the signed-in person changes their own password (the current one again, then the
   * new one); the way out of a session that may only change it (`mustChangePassword` of the sign-in).
   * @throws LinekeeperError LK_REAUTH_FAILED (wrong current password), LK_PASSWORD_WEAK, LK_PASSWORD_REUSED (the site's policy refuses the new one), LK_VALIDATION.
   */
  changePassword(o: { current: string; password: string }): Promise<PasswordChanged> {
    return this.#call<PasswordChanged>('POST', '/v1/auth/password', { body: { current: o.current, password: o.password } });
  }

  /** GET /healthz: the daemon answers (no sign-in). */
  health(): Promise<Health> {
    return this.#call<Health>('GET', '/healthz', { auth: false });
  }

  /**
   * POST /runs: start a run from a free-text request and the batch record in the MES; its plan in `run.record`.
   * @throws LinekeeperError LK_RUN_REQUEST_INVALID, LK_RUN_REQUEST_LOOSENS, LK_LINE_BUSY, LK_LINE_NOT_READY (the problem's `reasons`), LK_BATCH_CLOSED (the batch ran already), LK_NOT_FOUND (no such batch), LK_FORBIDDEN.
   */
  async startRun(o: { request: string; autonomy?: Autonomy }): Promise<Run> {
    const record = await this.#tenantCall<RunRecord>('POST', '/runs', { body: { request: o.request, ...(o.autonomy ? { autonomy: o.autonomy } : {}) } });
    return new Run(this, record.id, record);
  }

  /** GET /runs: the tenant's runs, newest first, one page; pass `next` back as `cursor`. */
  listRuns(o: { limit?: number; cursor?: string } = {}): Promise<RunPage> {
    return this.#tenantCall<RunPage>('GET', '/runs', { query: o });
  }

  /**
   * GET /runs/{id}: steps with statuses and durations, the approval gate; `signal` gives up waiting for it.
   * @throws LinekeeperError LK_NOT_FOUND.
   */
  getRun(id: string, o: { signal?: AbortSignal } = {}): Promise<RunRecord> {
    return this.#tenantCall<RunRecord>('GET', `/runs/${encodeURIComponent(id)}`, o.signal ? { signal: o.signal } : {});
  }

  /** A handle on a run by id (nothing is read until asked), e.g. for a QA reviewer's client to sign its gate. */
  run(id: string): Run {
    return new Run(this, id);
  }

  /** GET /runs/{id}/genealogy. */
  genealogy(id: string): Promise<Genealogy> {
    return this.#tenantCall<Genealogy>('GET', `/runs/${encodeURIComponent(id)}/genealogy`);
  }

  /**
   * GET /runs/{id}/stream: the run's tool-call lines as they are logged, resumed after a dropped connection with
   * Last-Event-ID; the iteration returns the terminal run status.
   */
  toolCalls(id: string, o: ToolCallStreamOptions = {}): Channel<ToolCallLine, RunStatus> {
    const url = this.#base().then((base) => `${this.url}${base}/runs/${encodeURIComponent(id)}/stream`);
    return toolCallStream((u, init) => this.authorizedFetch(u, init), url, o);
  }

  /** GET /approvals: batch releases at the gate and setpoint writes waiting for a person. */
  approvals(): Promise<ApprovalList> {
    return this.#tenantCall<ApprovalList>('GET', '/approvals');
  }

  /**
   * GET /signature-meanings: the site's controlled list of signature meanings (every signed-in role), all of them or
   * those for one purpose (`release`, `move`, …). A signing call names one entry — its id, or its text with the
   * placeholders filled for the record — and may add a free-text comment beside it.
   */
  signatureMeanings(purpose?: SignaturePurpose): Promise<SignatureMeanings> {
    return this.#tenantCall<SignatureMeanings>('GET', '/signature-meanings', { query: purpose ? { for: purpose } : {} });
  }

  /**
   * POST /approvals/{id}: sign a decision as the signed-in QA reviewer, re-authenticated with the password. `meaning`
   * is one of the site's release meanings for that decision ({@link signatureMeanings}), by id or text; `comment` goes beside it.
   * @throws LinekeeperError LK_MEANING_NOT_ALLOWED (not on the list: nothing signed, the password not checked; `err.meanings`
   *   lists those that are), LK_REAUTH_FAILED (wrong password; nothing signed), LK_APPROVAL_FORBIDDEN (not the
   *   batch's named reviewer, or the person who started the run), LK_APPROVAL_DECIDED, LK_FORBIDDEN,
   *   LK_SPEC_FAILED (the batch failed a specification: only a rejection), LK_SPEC_CHANGED (new results since the
   *   gate: review the table again), LK_EXCEPTIONS_OPEN.
   */
  approve(id: string, d: Decision): Promise<Signature> {
    return this.#tenantCall<Signature>('POST', `/approvals/${encodeURIComponent(id)}`, { body: { decision: d.decision, meaning: d.meaning, ...(d.comment !== undefined ? { comment: d.comment } : {}), password: d.password } });
  }

  /** The setpoint moves waiting for a person (GET /approvals, kind setpoint_write): whom, what, since when. */
  async moves(): Promise<PendingMove[]> {
    return (await this.approvals()).items.filter((a) => a.kind === 'setpoint_write');
  }

  /**
   * POST /approvals/{id} for a waiting move: approve or reject it as the signed-in person, re-authenticated with
   * the password, bound to the vector hash the reviewer saw (`recordHash` from {@link moves}).
   * @throws LinekeeperError LK_MOVE_WITHDRAWN (superseded, or its step or run ended: nothing signed),
   *   LK_MEANING_NOT_ALLOWED (not one of the site's move meanings for the decision), LK_APPROVAL_STALE, LK_APPROVAL_FORBIDDEN, LK_REAUTH_FAILED, LK_NOT_FOUND.
   */
  decideMove(id: string, d: MoveDecision): Promise<MoveDecided> {
    return this.#tenantCall<MoveDecided>('POST', `/approvals/${encodeURIComponent(id)}`, { body: { decision: d.decision, meaning: d.meaning, ...(d.comment !== undefined ? { comment: d.comment } : {}), password: d.password, recordHash: d.recordHash } });
  }

  /** GET /arbitration/escalations: the deadlocks waiting for a person; each holds its setpoint until one decides. */
  escalations(): Promise<EscalationList> {
    return this.#tenantCall<EscalationList>('GET', '/arbitration/escalations');
  }

  /**
   * POST /arbitration/escalations/{setpoint}: decide a deadlock as the signed-in person with a reason (audited).
   * @throws LinekeeperError LK_NOT_FOUND (none pending), LK_VALIDATION (not a side, no reason), LK_FORBIDDEN.
   */
  decideEscalation(setpoint: string, d: { choose: string; reason: string }): Promise<EscalationDecided> {
    return this.#tenantCall<EscalationDecided>('POST', `/arbitration/escalations/${encodeURIComponent(setpoint)}`, { body: { choose: d.choose, reason: d.reason } });
  }

  /** GET /runs/{id}/exceptions: the run's exceptions with their evidence and status, and its specification table. */
  exceptions(runId: string): Promise<ExceptionList> {
    return this.#tenantCall<ExceptionList>('GET', `/runs/${encodeURIComponent(runId)}/exceptions`);
  }

  /**
   * POST /exceptions/{id}/close: close an exception with a comment as the signed-in person, re-authenticated with
   * the password (a signature for a critical or major one, which only a QA reviewer closes).
   * @throws LinekeeperError LK_REAUTH_FAILED (nothing closed), LK_APPROVAL_FORBIDDEN, LK_EXCEPTION_CLOSED, LK_NOT_FOUND.
   */
  closeException(id: string, c: ExceptionClosure): Promise<ClosedException> {
    return this.#tenantCall<ClosedException>('POST', `/exceptions/${encodeURIComponent(id)}/close`, { body: { comment: c.comment, ...(c.deviation ? { deviation: c.deviation } : {}), ...(c.password !== undefined ? { password: c.password } : {}), ...(c.meaning !== undefined ? { meaning: c.meaning } : {}) } });
  }

  /**
   * POST /runs/{id}/resume: resume a HELD or INTERRUPTED run as the signed-in process engineer or QA reviewer;
   * the step that stopped runs again from its start.
   * @throws LinekeeperError LK_RUN_STATE (not HELD or INTERRUPTED), LK_FORBIDDEN / LK_APPROVAL_FORBIDDEN, LK_VALIDATION (no reason), LK_NOT_FOUND.
   */
  resumeRun(id: string, o: { reason: string }): Promise<RunRecord> {
    return this.#tenantCall<RunRecord>('POST', `/runs/${encodeURIComponent(id)}/resume`, { body: { reason: o.reason } });
  }

  /**
   * POST /runs/{id}/abort: abort a run that is not final, signed with the password: the line goes to its last
   * known-good recipe (each PLC's read-back in `reverted`), a pending approval is withdrawn, the run ends ABORTED
   * with a "not a release" package.
   * @throws LinekeeperError LK_REAUTH_FAILED / LK_REAUTH_REQUIRED (nothing done), LK_RUN_STATE (final already), LK_FORBIDDEN / LK_APPROVAL_FORBIDDEN, LK_NOT_FOUND.
   */
  abortRun(id: string, o: { reason: string; password?: string; meaning?: string }): Promise<AbortedRun> {
    return this.#tenantCall<AbortedRun>('POST', `/runs/${encodeURIComponent(id)}/abort`, { body: { reason: o.reason, ...(o.password !== undefined ? { password: o.password } : {}), ...(o.meaning !== undefined ? { meaning: o.meaning } : {}) } });
  }

  /**
   * POST /runs/{id}/reassign: name another QA reviewer for a run that is not final, signed with the password, by a
   * role of the bundle's approvers.reassign; the new reviewer must be an active user with a QA role for the tenant.
   * @throws LinekeeperError LK_REVIEWER_INVALID, LK_REAUTH_FAILED, LK_RUN_STATE, LK_FORBIDDEN / LK_APPROVAL_FORBIDDEN, LK_NOT_FOUND.
   */
  reassignReviewer(id: string, o: { to: string; reason: string; password?: string; meaning?: string }): Promise<ReassignedReviewer> {
    return this.#tenantCall<ReassignedReviewer>('POST', `/runs/${encodeURIComponent(id)}/reassign`, { body: { to: o.to, reason: o.reason, ...(o.password !== undefined ? { password: o.password } : {}), ...(o.meaning !== undefined ? { meaning: o.meaning } : {}) } });
  }

  /** GET /models: cards, validation status, pinned sites. */
  models(): Promise<ModelList> {
    return this.#tenantCall<ModelList>('GET', '/models');
  }

  /**
   * POST /models/{id}/promote: one step forward (draft → shadow → validated) as the signed-in person, signed
   * with the password (`password`; an SSO client's token must come from a fresh provider sign-in instead).
   * @throws LinekeeperError LK_NOT_FOUND (not the tenant's model), LK_MODEL_CHANGE (role not in the bundle's
   *   approvers.change), LK_MODEL_TRANSITION, LK_REAUTH_REQUIRED / LK_REAUTH_FAILED, LK_MODEL_GATE_FAILED.
   */
  promoteModel(id: string, o: { to: 'shadow' | 'validated'; changeRef: string; reason: string; password?: string; meaning?: string }): Promise<ModelChange> {
    return this.#tenantCall<ModelChange>('POST', `/models/${encodeURIComponent(id)}/promote`, { body: o });
  }

  /** POST /models/{id}/retire: take a model out of use (final), signed as {@link promoteModel}. @throws LinekeeperError as promoteModel. */
  retireModel(id: string, o: { changeRef: string; reason: string; password?: string; meaning?: string }): Promise<ModelChange> {
    return this.#tenantCall<ModelChange>('POST', `/models/${encodeURIComponent(id)}/retire`, { body: o });
  }

  /**
   * PUT /autonomy: change one level as the signed-in person (an agent, an agent on a setpoint, or a setpoint's
   * ceiling): lowering always; raising one step at a time by a role the bundle permits, with a change reference
   * and the password (a signature; without it the daemon answers LK_REAUTH_REQUIRED once it knows the raise is permitted).
   * @throws LinekeeperError LK_REAUTH_REQUIRED, LK_REAUTH_FAILED, LK_AUTONOMY_CHANGE, LK_FORBIDDEN, LK_VALIDATION.
   */
  setAutonomy(change: AutonomyChangeRequest): Promise<AutonomyChange> {
    return this.#tenantCall<AutonomyChange>('PUT', '/autonomy', { body: change });
  }

  /** POST /twin/simulate: rehearse candidates on the tenant's validated twin (audited). */
  simulate(o: { candidates: number; horizon: string; seed?: number }): Promise<Simulation> {
    return this.#tenantCall<Simulation>('POST', '/twin/simulate', { body: o });
  }

  /** POST /attendance: the signed-in operator's presence heartbeat (R5); send it while attending a run. */
  attendance(): Promise<Attendance> {
    return this.#tenantCall<Attendance>('POST', '/attendance', { body: {} });
  }

  /** GET /line: equipment, connections, PLC supervisor state, and the site's time zone (`timezone`, for people's times). */
  line(): Promise<Line> {
    return this.#tenantCall<Line>('GET', '/line');
  }

  /** GET /line/readiness: is the line ready for a run, and every reason it is not (what startRun refuses with LK_LINE_NOT_READY). */
  lineReadiness(): Promise<LineReadiness> {
    return this.#tenantCall<LineReadiness>('GET', '/line/readiness');
  }

  /**
   * POST /line/equipment/{unit}/rearm: re-arm a LOST PLC as the signed-in process engineer, with a reason (audited).
   * @throws LinekeeperError LK_FORBIDDEN (not a role the policy bundle names), LK_NOT_FOUND, LK_CONFLICT (ATTENDED already), LK_WRITE_FAILED (the PLC refused: no heartbeat).
   */
  rearm(unit: string, o: { reason: string }): Promise<Rearmed> {
    return this.#tenantCall<Rearmed>('POST', `/line/equipment/${encodeURIComponent(unit)}/rearm`, { body: o });
  }

  /** GET /audit: the tenant's audit trail by batch, run, agent, tool, reviewer, time; one page. */
  audit(filter: AuditFilter = {}): Promise<AuditPage> {
    return this.#tenantCall<AuditPage>('GET', '/audit', { query: filter });
  }

  /**
   * GET /audit/people: the site chain's account entries about the tenant's people (sign-ins, failed attempts,
   * re-authentications, sign-outs, password changes, locks); `actor` is the person. One page.
   */
  auditPeople(filter: AuditFilter = {}): Promise<AuditPage> {
    return this.#tenantCall<AuditPage>('GET', '/audit/people', { query: filter });
  }

  /** GET /audit/review: a run's or a period's trail as a reviewer reads it, GMP-relevant changes first, with the reviews so far. */
  auditTrailForReview(scope: TrailScope): Promise<TrailReviewView> {
    return this.#tenantCall<TrailReviewView>('GET', '/audit/review', { query: scope });
  }

  /**
   * POST /audit/reviews: sign, as the signed-in QA reviewer, that the scope's audit trail was reviewed (Annex 11 §9), with a comment;
   * pass the view's `last` as `through` and its `digest` to sign exactly what was read.
   * @throws LinekeeperError LK_APPROVAL_FORBIDDEN (not a QA role of the policy bundle), LK_REAUTH_FAILED (wrong password), LK_NOT_FOUND (no such run),
   *   LK_CONFLICT (the entries differ from the digest), LK_VALIDATION.
   */
  reviewAuditTrail(scope: TrailScope, o: { comment: string; password: string; through?: number; digest?: string; meaning?: string }): Promise<TrailReview> {
    return this.#tenantCall<TrailReview>('POST', '/audit/reviews', { body: { ...scope, ...o } });
  }

  /** GET /audit/reviews: the audit-trail reviews recorded so far (of one run with `run`), oldest first. */
  auditTrailReviews(run?: string): Promise<TrailReview[]> {
    return this.#tenantCall<{ items: TrailReview[] }>('GET', '/audit/reviews', { query: run ? { run } : {} }).then((r) => r.items);
  }

  /** GET /design-space: the approved limits of one of the tenant's product × tooling families. @throws LinekeeperError LK_NOT_FOUND. */
  designSpace(product: string, tooling: string): Promise<DesignSpaceRecord> {
    return this.#tenantCall<DesignSpaceRecord>('GET', '/design-space', { query: { product, tooling } });
  }
}

let fallback: LinekeeperClient | undefined;

/**
 * The client that `DesignSpace.approved(…)` and `agent.start(…)` use when they are not given one, so code can
 * read as the spec writes it. Pass undefined to forget it.
 */
export function setDefaultClient(client: LinekeeperClient | undefined): void {
  fallback = client;
}

/** `client`, else the default one. @throws LinekeeperError LK_VALIDATION when there is neither. */
export function clientOf(client?: LinekeeperClient): LinekeeperClient {
  const c = client ?? fallback;
  if (!c) throw sdkError('LK_VALIDATION', 'client: pass { client } or call setDefaultClient(client) first', { issues: [{ path: 'client', message: 'required' }] });
  return c;
}
