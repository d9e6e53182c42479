/**
 * The mapping of every kind of error to a problem+json body (src/api/problem.ts) and the password hashes of
 * the local identities (src/api/identity.ts): codes and statuses from the registry, the path of each invalid
 * field, nothing of an internal fault leaked, and hashes that verify only their own password.
 */
import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../src/api/identity.js';
import { toProblem } from '../../src/api/problem.js';
import { ERRORS, LkError } from '../../src/errors.js';

const req = { url: '/v1/tenants/acme-pharma/runs?limit=5' };

describe('toProblem', () => {
  it('keeps an LkError\'s code, the registry\'s title and status, its message as detail, and the path without the query', () => {
    const { problem, internal } = toProblem(new LkError('LK_LINE_BUSY', 'line line-3 runs run_x'), req);
    expect(problem).toEqual({
      type: 'urn:linekeeper:error:LK_LINE_BUSY', title: ERRORS.LK_LINE_BUSY.title, status: 409, detail: 'line line-3 runs run_x', code: 'LK_LINE_BUSY', instance: '/v1/tenants/acme-pharma/runs',
    });
    expect(internal).toBe(false);
  });

  it('names each invalid field of a validation error, and each unknown key', () => {
    const err = Object.assign(new Error('body/request must be string'), {
      validationContext: 'body',
      validation: [
        { keyword: 'invalid_type', instancePath: '/request', schemaPath: '', params: {}, message: 'expected string' },
        { keyword: 'unrecognized_keys', instancePath: '/', schemaPath: '', params: { keys: ['operator', 'by'] }, message: 'Unrecognized keys' },
      ],
    });
    const { problem } = toProblem(err, req);
    expect(problem.code).toBe('LK_VALIDATION');
    expect(problem.status).toBe(400);
    expect(problem.issues).toEqual([
      { path: 'body.request', message: 'expected string' },
      { path: 'body.operator', message: 'unknown field "operator"' },
      { path: 'body.by', message: 'unknown field "by"' },
    ]);
  });

  it('maps fastify\'s own 4xx errors to registry codes, and any other 4xx by its status', () => {
    const fst = (code: string, statusCode: number) => Object.assign(new Error(code), { code, statusCode });
    expect(toProblem(fst('FST_ERR_CTP_BODY_TOO_LARGE', 413), req).problem.code).toBe('LK_PAYLOAD_TOO_LARGE');
    expect(toProblem(fst('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415), req).problem.code).toBe('LK_UNSUPPORTED_MEDIA_TYPE');
    expect(toProblem(fst('FST_ERR_MAX_PARAM_LENGTH', 414), req).problem).toMatchObject({ code: 'LK_VALIDATION', status: 400 });
    expect(toProblem(fst('SOMETHING_ELSE', 401), req).problem.code).toBe('LK_UNAUTHENTICATED');
    expect(toProblem(fst('SOMETHING_ELSE', 418), req).problem).toMatchObject({ code: 'LK_VALIDATION', status: 400 });
  });

  it('an unexpected fault is LK_INTERNAL 500 and says nothing of its message', () => {
    const { problem, internal } = toProblem(new TypeError('cannot read properties of undefined (reading "secret")'), req);
    expect(problem).toMatchObject({ code: 'LK_INTERNAL', status: 500 });
    expect(problem.detail).not.toContain('secret');
    expect(internal).toBe(true);
  });
});

describe('password hashes', () => {
  it('verify their own password only, and a malformed or foreign hash never', async () => {
    const h = await hashPassword('correct horse battery', 10);
    expect(h).toMatch(/^scrypt\$10\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(await verifyPassword('correct horse battery', h)).toBe(true);
    expect(await verifyPassword('correct horse batterY', h)).toBe(false);
    expect(await hashPassword('correct horse battery', 10)).not.toBe(h);
    for (const bad of ['', 'plain', h.replace('scrypt', 'bcrypt'), h.replace('$10$', '$99$'), h.slice(0, -4)]) expect(await verifyPassword('correct horse battery', bad)).toBe(false);
  });
});
