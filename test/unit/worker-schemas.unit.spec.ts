/**
 * The release package's worker thread loads no schema library (src/engine/release-worker.ts): compiling zod is
 * about 9 MB of each such thread's peak on an edge node. What it receives was validated on the main thread
 * (the release input, the audit filter), and the audit entry's schema is loaded on the main thread only
 * (src/audit/entry.ts), where entries are appended. Checked in a real worker thread, running the sources through
 * tsx's loader as the daemon's workers do under the tests.
 *
 * The probe is zod's own: its core sets `globalThis.__zod_globalConfig` when it is evaluated in a realm. The
 * same worker then loads the entry's schema, so the probe is shown to turn true.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { parseEntryInput } from '../../src/audit/entry.js';

interface Report {
  readonly zodAfterWorkerModule: boolean;
  readonly plainEntry: string;
  readonly signedEntry: string;
  readonly zodAfterSchema: boolean;
}

const src = (p: string): string => new URL(`../../src/${p}`, import.meta.url).href;
const PLAIN = { tenant: 'acme-pharma', actor: 'system', kind: 'system', action: 'x' };
const SIGNED = { ...PLAIN, signature: { user: 'm.rossi', name: 'Maria Rossi', meaning: 'approved', time: '2026-11-28T08:00:00.000Z' } };

function inWorker(): Promise<Report> {
  const api = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api')).href.replace(/\.cjs$/, '.mjs');
  const code = `
    const { parentPort } = require('node:worker_threads');
    const probe = () => '__zod_globalConfig' in globalThis;
    const outcome = (f) => { try { f(); return 'accepted'; } catch (e) { return e.code ?? String(e); } };
    (async () => {
      (await import(${JSON.stringify(api)})).register();
      await import(${JSON.stringify(src('engine/release-worker.ts'))});
      const zodAfterWorkerModule = probe();
      const { parseEntryInput } = await import(${JSON.stringify(src('audit/entry.ts'))});
      const plainEntry = outcome(() => parseEntryInput(${JSON.stringify(PLAIN)}));
      const signedEntry = outcome(() => parseEntryInput(${JSON.stringify(SIGNED)}));
      await import(${JSON.stringify(src('audit/entry-schema.ts'))});
      parentPort.postMessage({ zodAfterWorkerModule, plainEntry, signedEntry, zodAfterSchema: probe() });
    })().catch((e) => parentPort.postMessage({ error: String(e && e.stack || e) }));`;
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true });
    w.once('message', (m: Report & { error?: string }) => {
      void w.terminate();
      if (m.error) reject(new Error(m.error));
      else resolve(m);
    });
    w.once('error', reject);
  });
}

describe('schemas stay on the main thread', () => {
  it("the release worker's modules load no zod; an entry needing the schema is refused there, a plain one accepted", async () => {
    const r = await inWorker();
    expect(r.zodAfterWorkerModule).toBe(false);
    expect(r.plainEntry).toBe('accepted');
    expect(r.signedEntry).toBe('LK_INTERNAL');
    // the probe turns when zod is evaluated in the worker's realm
    expect(r.zodAfterSchema).toBe(true);
  });

  it('on the main thread the schema validates what the plain checks leave to it', () => {
    expect(parseEntryInput(SIGNED)).toEqual(SIGNED);
    expect(() => parseEntryInput({ ...SIGNED, signature: { ...SIGNED.signature, time: '2026-11-28T08:00:00Z' } })).toThrow(/signature\.time/);
  });
});
