/**
 * Security modes Sign and SignAndEncrypt (Basic256Sha256) against the
 * simulator, and the trust workflow: an unknown server certificate is
 * refused with LK_CERT_UNTRUSTED and parked in <data>/pki/rejected; after
 * `linekeeper certs trust <thumbprint>` both secure modes connect;
 * `certs reject` takes the trust back.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createOpcUaConnector, listCertificates } from '../../connectors/opcua/index.js';
import type { OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';
import { buildProgram } from '../../src/cli/main.js';
import { LkError } from '../../src/errors.js';
import { startTestSimulator, type Simulator } from '../helpers/sim.js';

let sim: Simulator;
let dataDir: string;
let serverThumbprint: string;

function connector(mode: 'Sign' | 'SignAndEncrypt') {
  const cfg = sim.config.config;
  const conn = cfg.connections.find((k) => k.protocol === 'opcua') as OpcUaConnectionConfig;
  const connection: OpcUaConnectionConfig = { ...conn, security: { mode, policy: 'Basic256Sha256' }, keepalive_ms: 500, request_timeout_ms: 3000 };
  const equipment = cfg.equipment.filter((e): e is OpcUaEquipmentConfig => e.protocol === 'opcua');
  return createOpcUaConnector({ connection, equipment, url: sim.opcuaUrl, dataDir, backoff: { initialMs: 100, maxMs: 300 } });
}

/** Run `linekeeper <args>` in-process; returns stdout. */
async function cli(...args: string[]): Promise<string> {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await (await buildProgram(args)).parseAsync(['node', 'linekeeper', ...args]);
  } finally {
    spy.mockRestore();
  }
  return out;
}

async function connectError(mode: 'Sign' | 'SignAndEncrypt'): Promise<LkError | undefined> {
  const c = connector(mode);
  try {
    await c.connect();
    return undefined;
  } catch (e) {
    if (!LkError.is(e)) throw e;
    return e as LkError;
  } finally {
    await c.close();
  }
}

beforeAll(async () => {
  sim = await startTestSimulator();
  dataDir = mkdtempSync(join(tmpdir(), 'lk-opcua-sec-'));
  serverThumbprint = new X509Certificate(readFileSync(sim.serverCertificateFile)).fingerprint.replace(/:/g, '').toLowerCase();
});

afterAll(async () => {
  await sim?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('OPC UA security and server certificate trust', () => {
  it('[P11.10(h)] refuses an unknown server certificate with LK_CERT_UNTRUSTED and keeps it in rejected/', async () => {
    const e = await connectError('Sign');
    expect(e?.code).toBe('LK_CERT_UNTRUSTED');
    const certs = listCertificates(dataDir);
    expect(certs).toEqual([expect.objectContaining({ status: 'rejected', thumbprint: serverThumbprint, valid: true })]);
    // our own client certificate was made under <data>/pki, not in the home directory
    expect(existsSync(join(dataDir, 'pki', 'own', 'certs', 'client_certificate.pem'))).toBe(true);
    // still untrusted on a second try: nothing auto-accepts it
    expect((await connectError('SignAndEncrypt'))?.code).toBe('LK_CERT_UNTRUSTED');
  });

  it('`certs list` shows it; `certs trust` moves it to trusted', async () => {
    const listed = await cli('certs', 'list', '--data', dataDir);
    expect(listed).toContain('rejected');
    expect(listed).toContain(serverThumbprint);
    const trusted = await cli('certs', 'trust', serverThumbprint.slice(0, 12), '--data', dataDir);
    expect(trusted).toContain(serverThumbprint);
    expect(listCertificates(dataDir).map((c) => [c.status, c.thumbprint])).toEqual([['trusted', serverThumbprint]]);
  });

  it.each(['Sign', 'SignAndEncrypt'] as const)('connects with %s Basic256Sha256 once trusted, and reads', async (mode) => {
    const c = connector(mode);
    try {
      await c.connect();
      const [s] = await c.read(['press.MainForce']);
      expect(s).toMatchObject({ quality: 'good', value: sim.plant.read('press', 'MainForce') });
    } finally {
      await c.close();
    }
  });

  it('`certs reject` takes the trust back; unknown thumbprints are LK_NOT_FOUND', async () => {
    await cli('certs', 'reject', serverThumbprint, '--data', dataDir);
    expect(listCertificates(dataDir).map((c) => c.status)).toEqual(['rejected']);
    expect((await connectError('Sign'))?.code).toBe('LK_CERT_UNTRUSTED');
    await expect(cli('certs', 'trust', 'deadbeefdeadbeef', '--data', dataDir)).rejects.toMatchObject({ code: 'LK_NOT_FOUND' });
    await expect(cli('certs', 'trust', 'xyz', '--data', dataDir)).rejects.toMatchObject({ code: 'LK_VALIDATION' });
  });
});
