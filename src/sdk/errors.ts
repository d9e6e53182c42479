/**
 * The SDK's one error type. Every refusal of the daemon is an RFC 9457 problem+json body with a stable `LK_*`
 * code (src/errors.ts); the SDK hands it on as a {@link LinekeeperError} with that code, the HTTP status and
 * the detail, so callers branch on `err.code`, never on a message. What the SDK finds itself (a declaration
 * that does not validate, a daemon it cannot reach, an answer that is not the API's) carries a code of the
 * same registry.
 */
import type { z } from 'zod';
import { CAMEL_KEY, issuesOf } from '../domain/issues.js';
import { ERRORS, type ErrorCode } from '../errors.js';

/** One invalid field of a refused request or declaration: `body.autonomy`, `tools[0].tags[1]`. */
export interface Issue {
  readonly path: string;
  readonly message: string;
}

export interface ProblemFields {
  /** `LK_*`; a newer daemon may send a code this SDK does not know, so it is typed as a string. */
  readonly code: string;
  /** The HTTP status of the answer; 0 when there was none (the daemon could not be reached). */
  readonly status: number;
  readonly detail: string;
  readonly title?: string;
  readonly type?: string;
  readonly instance?: string;
  readonly issues?: readonly Issue[];
  /** LK_LINE_NOT_READY: every reason the line is not ready (the problem's `reasons` member). */
  readonly reasons?: readonly Reason[];
  /** LK_BATCH_CLOSED: the batch, the run that closed it and its final status (the problem's `closed` member). */
  readonly closed?: Closed;
  /** LK_MEANING_NOT_ALLOWED: the site's signature meanings this act allows, filled for the record (the problem's `meanings` member). */
  readonly meanings?: readonly MeaningOption[];
  /** The request that was refused, `GET /v1/tenants/…/runs/…` (set by the SDK for an answer it read). */
  readonly request?: string;
}

/** Why the line is not ready: a stable code (PLC_LOST, CONNECTION_DOWN, …), what it is about, in words. */
export interface Reason {
  readonly code: string;
  readonly subject: string;
  readonly message: string;
}

/** The run that closed a batch. */
export interface Closed {
  readonly batch: string;
  readonly run: string;
  readonly status: string;
}

/** A signature meaning the daemon allows for an act: its id and its text filled for the record. */
export interface MeaningOption {
  readonly id: string;
  readonly text: string;
}

/** A refusal of the daemon, or an error the SDK found before or after asking it. */
export class LinekeeperError extends Error {
  readonly code: string;
  readonly status: number;
  readonly detail: string;
  readonly title: string;
  readonly type: string;
  readonly instance: string | undefined;
  readonly issues: readonly Issue[];
  readonly reasons: readonly Reason[];
  readonly closed: Closed | undefined;
  readonly meanings: readonly MeaningOption[];
  readonly request: string | undefined;

  constructor(p: ProblemFields, options?: { cause?: unknown }) {
    super(`${p.detail} [${p.code}]`, options);
    this.name = 'LinekeeperError';
    this.code = p.code;
    this.status = p.status;
    this.detail = p.detail;
    this.title = p.title ?? (p.code in ERRORS ? ERRORS[p.code as ErrorCode].title : p.code);
    this.type = p.type ?? `urn:linekeeper:error:${p.code}`;
    this.instance = p.instance;
    this.issues = p.issues ?? [];
    this.reasons = p.reasons ?? [];
    this.closed = p.closed;
    this.meanings = p.meanings ?? [];
    this.request = p.request;
  }

  /** Cross-realm-safe check (two copies of the SDK, worker threads), optionally for one code. */
  static is(err: unknown, code?: string): err is LinekeeperError {
    if (typeof err !== 'object' || err === null || (err as Error).name !== 'LinekeeperError') return false;
    const c = (err as { code?: unknown }).code;
    return typeof c === 'string' && (code === undefined || c === code);
  }
}

/** An error the SDK raises itself, with the registry's status for its code. */
export function sdkError(code: ErrorCode, detail: string, extra: { issues?: readonly Issue[]; cause?: unknown } = {}): LinekeeperError {
  return new LinekeeperError({ code, status: ERRORS[code].status, detail, ...(extra.issues ? { issues: extra.issues } : {}) }, extra.cause === undefined ? undefined : { cause: extra.cause });
}

/** A declaration that does not validate: LK_VALIDATION naming every bad field (`what` says what was declared). */
export function declarationError(what: string, error: z.core.$ZodError): LinekeeperError {
  const issues = issuesOf(error, CAMEL_KEY);
  return sdkError('LK_VALIDATION', `${what} is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, { issues });
}

/**
 * The error of a non-2xx answer: its problem+json body when it is one, else LK_API_RESPONSE (a proxy's HTML
 * page, a daemon of another kind). Reads the body. `request` names what was asked (`GET /v1/…`).
 */
export async function problemOf(res: Response, request?: string): Promise<LinekeeperError> {
  const text = await res.text().catch(() => '');
  let body: Partial<Omit<ProblemFields, 'request'>> | undefined;
  try {
    body = JSON.parse(text) as Partial<ProblemFields>;
  } catch {
    body = undefined;
  }
  if (body && typeof body.code === 'string' && typeof body.detail === 'string') {
    return new LinekeeperError({
      code: body.code, status: res.status, detail: body.detail,
      ...(typeof body.title === 'string' ? { title: body.title } : {}),
      ...(typeof body.type === 'string' ? { type: body.type } : {}),
      ...(typeof body.instance === 'string' ? { instance: body.instance } : {}),
      ...(Array.isArray(body.issues) ? { issues: body.issues } : {}),
      ...(Array.isArray(body.reasons) ? { reasons: body.reasons } : {}),
      ...(typeof body.closed === 'object' && body.closed !== null ? { closed: body.closed } : {}),
      ...(Array.isArray(body.meanings) ? { meanings: body.meanings } : {}),
      ...(request !== undefined ? { request } : {}),
    });
  }
  return new LinekeeperError({ code: 'LK_API_RESPONSE', status: res.status, detail: `HTTP ${res.status} without a problem body (${text.slice(0, 120) || 'empty'})`, ...(request !== undefined ? { request } : {}) });
}
