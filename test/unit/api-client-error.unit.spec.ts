/**
 * What Node's HTTP parser refuses before fastify sees a request (src/api/problem.ts clientProblem): a problem
 * body with a registry code and the connection closed — for the header overflow, a timeout and anything else —
 * and nothing written to a socket that is gone.
 */
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { clientProblem } from '../../src/api/problem.js';
import { ERRORS } from '../../src/errors.js';

function fakeSocket(o: { destroyed?: boolean; writable?: boolean } = {}) {
  const s = { destroyed: o.destroyed ?? false, writable: o.writable ?? true, written: [] as string[], destroyedWith: undefined as unknown, write(t: string) { s.written.push(t); return true; }, destroy(e?: unknown) { s.destroyedWith = e; s.destroyed = true; } };
  return s;
}
const errOf = (code: string): NodeJS.ErrnoException => Object.assign(new Error(code), { code });

describe('clientProblem', () => {
  for (const [nodeCode, lk] of [['HPE_HEADER_OVERFLOW', 'LK_HEADERS_TOO_LARGE'], ['ERR_HTTP_REQUEST_TIMEOUT', 'LK_REQUEST_TIMEOUT'], ['HPE_INVALID_METHOD', 'LK_VALIDATION']] as const) {
    it(`${nodeCode} → ${lk} as problem+json, then the connection is closed`, () => {
      const s = fakeSocket();
      clientProblem(errOf(nodeCode), s as unknown as Socket);
      expect(s.written).toHaveLength(1);
      const [head, body] = s.written[0]!.split('\r\n\r\n') as [string, string];
      expect(head).toMatch(new RegExp(`^HTTP/1\\.1 ${ERRORS[lk].status} `));
      expect(head).toContain('\r\ncontent-type: application/problem+json');
      expect(head).toContain('\r\nconnection: close');
      expect(head).toContain(`\r\ncontent-length: ${Buffer.byteLength(body)}`);
      expect(JSON.parse(body)).toEqual({ type: `urn:linekeeper:error:${lk}`, title: ERRORS[lk].title, status: ERRORS[lk].status, detail: expect.any(String), code: lk, instance: '' });
      expect(s.destroyed).toBe(true);
    });
  }

  it('writes nothing on a reset or a socket already gone', () => {
    const reset = fakeSocket();
    clientProblem(errOf('ECONNRESET'), reset as unknown as Socket);
    const gone = fakeSocket({ destroyed: true });
    clientProblem(errOf('HPE_HEADER_OVERFLOW'), gone as unknown as Socket);
    expect([reset.written, gone.written]).toEqual([[], []]);
  });
});
