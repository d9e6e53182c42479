/**
 * Start and stop the plant simulator in tests (real OPC UA + Modbus TCP
 * servers on 127.0.0.1, free ports), and make raw node-opcua clients whose
 * PKI lives in a temp dir (a node-opcua client otherwise writes one into the
 * home directory).
 *
 *   let sim: Simulator;
 *   beforeAll(async () => { sim = await startTestSimulator({ watchdogTimeoutMs: 800 }); });
 *   afterAll(async () => { await sim.close(); });
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OPCUACertificateManager, OPCUAClient, type ClientSession, type OPCUAClientOptions } from 'node-opcua';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../connectors/sim/index.js';

export type { Simulator, SimulatorOptions };

/**
 * A simulator for tests: time scale 60, seed 1, watchdog 3000 ms unless
 * overridden; PKI in a fresh temp dir removed by close().
 */
export async function startTestSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  return startSimulator({ timeScale: 60, seed: 1, watchdogTimeoutMs: 3000, ...opts });
}

export interface RawOpcUaSession {
  readonly client: OPCUAClient;
  readonly session: ClientSession;
  /** Namespace index of the simulator's namespace. */
  readonly ns: number;
  /** `ns=<ns>;s=<id>` */
  nodeId(id: string): string;
  close(): Promise<void>;
}

/** A raw node-opcua client session to the simulator (SecurityMode None unless options say otherwise), PKI in a temp dir. */
export async function rawOpcUaSession(sim: Simulator, options: Partial<OPCUAClientOptions> = {}): Promise<RawOpcUaSession> {
  const pki = mkdtempSync(join(tmpdir(), 'lk-test-client-pki-'));
  const client = OPCUAClient.create({
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    requestedSessionTimeout: 10_000,
    clientCertificateManager: new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true }),
    ...options,
  });
  try {
    await client.connect(sim.opcuaUrl);
    const session = await client.createSession();
    const ns = (await session.readNamespaceArray()).indexOf(sim.namespaceUri);
    return {
      client,
      session,
      ns,
      nodeId: (id) => `ns=${ns};s=${id}`,
      async close() {
        await session.close().catch(() => undefined);
        await client.disconnect().catch(() => undefined);
        rmSync(pki, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await client.disconnect().catch(() => undefined);
    rmSync(pki, { recursive: true, force: true });
    throw e;
  }
}

/** Poll `probe` until it returns true or `timeoutMs` passes; returns whether it did. */
export async function waitFor(probe: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 20): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() >= end) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
