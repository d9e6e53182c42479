/**
 * HTTPS for the REST API (`api.tls`, issue 20 §3): a self-signed certificate made here with openssl, a real daemon
 * serving HTTPS on loopback, a real TLS request that trusts only that certificate; and `doctor` on the same
 * files: beyond loopback without TLS fails, a key of another certificate or an expired certificate fails.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTls } from '../../src/config/api-tls.js';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { apiTlsCheck } from '../../src/ops/doctor.js';

let dir: string;

/**
 * openssl's environment without OPENSSL_CONF: node-opcua's certificate tooling sets it process-wide (to its PKI's
 * configuration file, or to the string "undefined" when it puts back an unset value), which an earlier test file of
 * the same worker leaves behind.
 */
function opensslEnv(): NodeJS.ProcessEnv {
  const { OPENSSL_CONF: _ignored, ...env } = process.env;
  return env;
}

function selfSigned(name: string): void {
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '90', '-subj', '/CN=linekeeper test',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'tls', `${name}.key`), '-out', join(dir, 'tls', `${name}.pem`),
  ], { stdio: 'ignore', env: opensslEnv() });
}

/** The site file with `api` set as given (YAML flow mapping). */
function site(api: string): string {
  const text = readFileSync(defaultConfigFile(), 'utf8').replace('data_dir: ./data', `data_dir: ./data\napi: ${api}`);
  const file = join(dir, `site-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return file;
}

/** One HTTPS request that trusts `ca` only. */
function get(url: string, path: string, ca: Buffer, o: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return new Promise((resolve, reject) => {
    const data = o.body === undefined ? undefined : JSON.stringify(o.body);
    const r = request(`${url}${path}`, { method: o.method ?? 'GET', ca, headers: data ? { 'content-type': 'application/json' } : {} }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    r.on('error', reject);
    r.end(data);
  });
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lk-tls-'));
  cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
  cpSync(join(defaultConfigFile(), '..', 'batches'), join(dir, 'batches'), { recursive: true });
  mkdirSync(join(dir, 'tls'));
  selfSigned('api');
  selfSigned('other');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('HTTPS for the REST API', () => {
  it('[A11.12] with api.tls the daemon serves HTTPS: a client trusting the certificate signs in; plain HTTP gets no API', async () => {
    let daemon: Daemon | undefined;
    try {
      daemon = await startDaemon({ configFile: site('{ tls: { cert: tls/api.pem, key: tls/api.key } }'), dataDir: join(dir, 'data'), logger: silentLogger, api: { host: '127.0.0.1', port: 0 } });
      const url = daemon.ready.api!;
      expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const ca = readFileSync(join(dir, 'tls', 'api.pem'));
      expect((await get(url, '/healthz', ca)).status).toBe(200);
      const rossi = daemon.demoUsers.find((u) => u.id === 'm.rossi')!;
      const signIn = await get(url, '/v1/auth/token', ca, { method: 'POST', body: { user: 'm.rossi', password: rossi.password } });
      expect(signIn.status).toBe(200);
      expect(signIn.body.mustChangePassword).toBe(true); // a one-time password of the demo set-up
      // a client that does not trust the certificate is refused by TLS itself
      await expect(get(url, '/healthz', readFileSync(join(dir, 'tls', 'other.pem')))).rejects.toThrow(/self[- ]signed|certificate/i);
      const plain = await fetch(url.replace('https:', 'http:') + '/healthz').then((r) => r.status, (e: Error) => e.message);
      expect(plain).not.toBe(200);
    } finally {
      await daemon?.stop('test done');
    }
  });

  it('doctor: beyond loopback without TLS fails; with TLS ok; another certificate\'s key, or a certificate past its end, fails', () => {
    const now = Date.now();
    const check = (api: string, at = now) => apiTlsCheck(loadConfig(site(api), { dataDir: join(dir, 'data2') }), at, 30);
    expect(check('{ host: 127.0.0.1 }').status).toBe('ok');
    expect(check('{ host: 0.0.0.0 }')).toMatchObject({ status: 'fail', message: expect.stringMatching(/without TLS/) });
    expect(check('{ host: 0.0.0.0, tls: { cert: tls/api.pem, key: tls/api.key } }')).toMatchObject({ status: 'ok', message: expect.stringMatching(/key matches/) });
    expect(check('{ host: 0.0.0.0, tls: { cert: tls/api.pem, key: tls/other.key } }')).toMatchObject({ status: 'fail', message: expect.stringMatching(/not the key of the certificate/) });
    expect(check('{ host: 0.0.0.0, tls: { cert: tls/api.pem, key: tls/missing.key } }')).toMatchObject({ status: 'fail', message: expect.stringMatching(/cannot be read/) });
    expect(check('{ host: 0.0.0.0, tls: { cert: tls/api.pem, key: tls/api.key } }', now + 75 * 86_400_000).status).toBe('warn');
    expect(check('{ host: 0.0.0.0, tls: { cert: tls/api.pem, key: tls/api.key } }', now + 91 * 86_400_000)).toMatchObject({ status: 'fail', message: expect.stringMatching(/not now/) });
    expect(() => loadTls({ cert: 'tls/api.key', key: 'tls/api.key' }, dir, now)).toThrow(/not a PEM certificate/);
  });
});
