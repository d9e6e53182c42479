/**
 * Every error the REST API answers is an RFC 9457 `application/problem+json` body carrying the stable `LK_*`
 * code of the error registry (src/errors.ts) and that code's HTTP status — an unknown route, a body with an
 * unknown field, a refused action, an error of the engine alike. Bad input is always a 4xx: only a fault of
 * linekeeper itself is a 5xx, and its detail says no more than that (the log has the rest).
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ERRORS, LkError, type ErrorCode } from '../errors.js';

export const PROBLEM_TYPE = 'application/problem+json';

export const Problem = z
  .object({
    type: z.string().describe('urn:linekeeper:error:<code>'),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string().regex(/^LK_[A-Z0-9_]+$/),
    instance: z.string().describe('the path of the request'),
    issues: z.array(z.object({ path: z.string(), message: z.string() })).optional().describe('every invalid field of a refused request'),
    reasons: z.array(z.object({ code: z.string(), subject: z.string(), message: z.string() })).optional().describe('LK_LINE_NOT_READY: every reason the line is not ready (stable codes: PLC_LOST, PLC_STATE_UNKNOWN, PLC_NOT_SUPERVISED, CONNECTION_DOWN, MODEL_INVALID, POLICY_BUNDLE_MISSING, LINE_BUSY)'),
    closed: z.object({ batch: z.string(), run: z.string(), status: z.string() }).optional().describe('LK_BATCH_CLOSED: the batch, the run that closed it and its final status'),
    meanings: z.array(z.object({ id: z.string(), text: z.string() })).optional().describe('LK_MEANING_NOT_ALLOWED: the site\'s signature meanings that this act and record allow, filled for the record (send one\'s id or text)'),
  })
  .meta({ id: 'Problem' });
export type Problem = z.infer<typeof Problem>;

/**
 * The error responses of every route in the OpenAPI document: what is sent (`sendProblem`), a Problem body as
 * `application/problem+json`, so a generated client or a validator keyed on the media type recognises it.
 */
export const PROBLEM_RESPONSES = {
  '4xx': { description: 'Refused: the request is invalid, not allowed or not possible now (the body\'s code says which)', content: { [PROBLEM_TYPE]: { schema: Problem } } },
  '5xx': { description: 'A fault of linekeeper itself, or it is not ready (LK_NOT_READY)', content: { [PROBLEM_TYPE]: { schema: Problem } } },
} as const;

interface Issue {
  readonly path: string;
  readonly message: string;
}

/** Fastify's own 4xx errors, by code, as registry codes. */
const FASTIFY_CODES: Readonly<Record<string, ErrorCode>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'LK_PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'LK_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'LK_VALIDATION',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'LK_VALIDATION',
  FST_ERR_CTP_INVALID_JSON_BODY: 'LK_VALIDATION',
  FST_ERR_VALIDATION: 'LK_VALIDATION',
  FST_ERR_BAD_URL: 'LK_VALIDATION',
  FST_ERR_MAX_PARAM_LENGTH: 'LK_VALIDATION',
  FST_ERR_NOT_FOUND: 'LK_ROUTE_NOT_FOUND',
};

const BY_STATUS: Readonly<Record<number, ErrorCode>> = { 401: 'LK_UNAUTHENTICATED', 403: 'LK_FORBIDDEN', 404: 'LK_ROUTE_NOT_FOUND', 413: 'LK_PAYLOAD_TOO_LARGE', 415: 'LK_UNSUPPORTED_MEDIA_TYPE' };

/** `body.autonomy`, `querystring.limit`, `body.extra` for an unknown key. */
function issuesOf(err: FastifyError): Issue[] {
  const where = err.validationContext ?? 'request';
  return (err.validation ?? []).flatMap((v) => {
    const base = `${where}${v.instancePath.replace(/\//g, '.').replace(/\.$/, '')}`;
    const keys = (v.params as { keys?: unknown } | undefined)?.keys;
    if (v.keyword === 'unrecognized_keys' && Array.isArray(keys)) return keys.map((k) => ({ path: `${base}.${String(k)}`, message: `unknown field "${String(k)}"` }));
    return [{ path: base, message: v.message ?? 'is invalid' }];
  });
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** The machine-readable members a refusal carries beside its text: the reasons a line is not ready, what closed a batch, the meanings allowed. */
function extensionsOf(err: LkError): Partial<Pick<Problem, 'reasons' | 'closed' | 'meanings'>> {
  const d = err.detail ?? {};
  if (err.code === 'LK_LINE_NOT_READY' && Array.isArray(d['reasons'])) {
    return { reasons: (d['reasons'] as Record<string, unknown>[]).map((r) => ({ code: String(r['code']), subject: String(r['subject']), message: String(r['message']) })) };
  }
  if (err.code === 'LK_BATCH_CLOSED' && typeof d['batch'] === 'string' && typeof d['run'] === 'string' && typeof d['status'] === 'string') {
    return { closed: { batch: d['batch'], run: d['run'], status: d['status'] } };
  }
  if (err.code === 'LK_MEANING_NOT_ALLOWED' && Array.isArray(d['meanings'])) {
    return { meanings: (d['meanings'] as Record<string, unknown>[]).map((m) => ({ id: String(m['id']), text: String(m['text']) })) };
  }
  return {};
}

/** The problem body for any error thrown in a route, a hook or by fastify itself. */
export function toProblem(err: unknown, req: Pick<FastifyRequest, 'url'>): { problem: Problem; internal: boolean } {
  const instance = pathOf(req.url);
  const make = (code: ErrorCode, detail: string, issues?: Issue[], more: Partial<Pick<Problem, 'reasons' | 'closed' | 'meanings'>> = {}): Problem => ({
    type: `urn:linekeeper:error:${code}`, title: ERRORS[code].title, status: ERRORS[code].status, detail, code, instance, ...(issues && issues.length > 0 ? { issues } : {}), ...more,
  });
  if (LkError.is(err)) {
    const code = err.code;
    const raw = (err as LkError).detail?.['issues'];
    const issues = Array.isArray(raw) ? raw.filter((i): i is Issue => typeof i?.path === 'string' && typeof i?.message === 'string') : undefined;
    const internal = ERRORS[code].status >= 500 && code === 'LK_INTERNAL';
    return { problem: make(code, internal ? 'internal error; the daemon log has the details' : (err as Error).message, issues, extensionsOf(err)), internal };
  }
  const fe = err as FastifyError;
  if (Array.isArray(fe?.validation)) {
    const issues = issuesOf(fe);
    return { problem: make('LK_VALIDATION', issues.map((i) => `${i.path}: ${i.message}`).join('; ') || 'request is invalid', issues), internal: false };
  }
  const mapped = typeof fe?.code === 'string' ? FASTIFY_CODES[fe.code] : undefined;
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (mapped) return { problem: make(mapped, fe.message), internal: false };
  if (status >= 400 && status < 500) return { problem: make(BY_STATUS[status] ?? 'LK_VALIDATION', fe.message || 'request is invalid'), internal: false };
  return { problem: make('LK_INTERNAL', 'internal error; the daemon log has the details'), internal: true };
}

/** Send a problem (a string body, so no response serializer touches it). */
export function sendProblem(reply: FastifyReply, problem: Problem): FastifyReply {
  if (problem.status === 401) reply.header('www-authenticate', 'Bearer realm="linekeeper"');
  return reply.code(problem.status).type(PROBLEM_TYPE).send(JSON.stringify(problem));
}

/** Fastify's `frameworkErrors` option: routing errors (a malformed URL, a path parameter too long) as problems. */
export function frameworkProblem(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  void sendProblem(reply, toProblem(err, req).problem);
}

/**
 * Fastify's `clientErrorHandler` option: a request Node's parser refused before fastify saw it (a URL or
 * headers over the size limit, a malformed request line, a timeout) is answered with a problem body too — the
 * default answer is plain JSON without a registry code — and the connection is closed, since the parser's
 * state is lost. The request has no parsed path, so `instance` is empty.
 */
export function clientProblem(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const code: ErrorCode = err.code === 'HPE_HEADER_OVERFLOW' ? 'LK_HEADERS_TOO_LARGE' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'LK_REQUEST_TIMEOUT' : 'LK_VALIDATION';
  const { title, status } = ERRORS[code];
  const body = JSON.stringify({ type: `urn:linekeeper:error:${code}`, title, status, detail: code === 'LK_VALIDATION' ? 'the request is not well-formed HTTP' : title, code, instance: '' } satisfies Problem);
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: ${PROBLEM_TYPE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

/** Route every error and every unknown route of `app` to a problem body. */
export function installProblems(app: FastifyInstance): void {
  app.setErrorHandler((err, req, reply) => {
    const { problem, internal } = toProblem(err, req);
    if (internal) req.log.error({ err }, 'request failed');
    else req.log.info({ code: problem.code, status: problem.status }, 'request refused');
    // a throttled client is told when to come back (RFC 9110 §10.2.3)
    const retry = LkError.is(err) ? err.detail?.['retryAfterS'] : undefined;
    if (problem.status === 429 && typeof retry === 'number') reply.header('retry-after', String(Math.max(1, Math.ceil(retry))));
    return sendProblem(reply, problem);
  });
  app.setNotFoundHandler((req, reply) => sendProblem(reply, toProblem(new LkError('LK_ROUTE_NOT_FOUND', `no route ${req.method} ${pathOf(req.url)}`), req).problem));
}
