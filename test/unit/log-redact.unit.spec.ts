import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';

function capture(): { stream: Writable; lines: () => Record<string, unknown>[]; text: () => string } {
  let buf = '';
  const stream = new Writable({ write(chunk, _enc, cb) { buf += String(chunk); cb(); } });
  return { stream, text: () => buf, lines: () => buf.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('log redaction', () => {
  it('replaces passwords, tokens, keys and authorization headers at any of three depths, keeps the rest', () => {
    const c = capture();
    const log = createLogger('info', c.stream);
    log.info({ user: 'p.bianchi', password: 'hunter2-hunter2' }, 'sign in');
    log.info({ req: { method: 'GET', headers: { authorization: 'Bearer abc.def', host: 'x' } } }, 'request');
    log.child({ component: 'api' }).warn({ body: { token: 'tok-123', user: 'm.rossi' }, cfg: { mqtt: { password: 'pw-deep' } } }, 'nested');
    log.info({ key: { privateKey: '-----BEGIN PRIVATE KEY-----' }, apiKey: 'k-1' }, 'keys');
    const [a, b, d, e] = c.lines();
    expect(a!['password']).toBe('[redacted]');
    expect(a!['user']).toBe('p.bianchi');
    expect((b!['req'] as { headers: Record<string, string> }).headers['authorization']).toBe('[redacted]');
    expect((b!['req'] as { headers: Record<string, string> }).headers['host']).toBe('x');
    expect((d!['body'] as Record<string, string>)['token']).toBe('[redacted]');
    expect((d!['cfg'] as { mqtt: Record<string, string> }).mqtt['password']).toBe('[redacted]');
    expect((e!['key'] as Record<string, string>)['privateKey']).toBe('[redacted]');
    expect(e!['apiKey']).toBe('[redacted]');
    for (const secret of ['hunter2', 'abc.def', 'tok-123', 'pw-deep', 'BEGIN PRIVATE', 'k-1']) expect(c.text()).not.toContain(secret);
  });
});
