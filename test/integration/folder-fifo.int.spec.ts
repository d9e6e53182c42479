/**
 * A FIFO named like a document in the MES inbox or the LIMS results folder (issue 20). A blocking open of a
 * FIFO waits for a writer, and on the main thread that wait is the whole daemon's: API, streams and PLC
 * heartbeats. The folders must refuse it at once, naming the file, while the daemon keeps answering.
 *
 * Nobody writes the FIFO while the test looks. A "valve" process (its own process, so a frozen daemon cannot
 * hold it) leaves a marker file and then writes the FIFO over and over, but only after a long wait. On code
 * that blocks, nothing answers until the valve opened, so the marker is there when the answer comes; code that
 * does not block answers with the marker still absent. What is asserted is the order (answer before marker)
 * and the outcome. Against blocking code each case fails after the valve's wait. When a case ends its FIFO is
 * removed before its valve is stopped, and each case has a folder of its own: a FIFO left behind with no valve
 * is what made this file hang on blocking code (the next case's folder scan opened it, and nothing ever would
 * write it).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { limsResultsDir, openFolderLims } from '../../connectors/lims/index.js';
import { mesInboxDir, openFolderMes } from '../../connectors/mes/index.js';
import { call, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { codeOf } from '../helpers/codes.js';

/** Seconds the valve waits before it writes: far longer than any answer of a daemon that does not block. */
const VALVE_S = 45;

interface Valve {
  readonly marker: string;
  /** Remove the FIFO (no later open can block on it), then stop the writer. */
  stop(): void;
}

function mkfifo(path: string): void {
  const r = spawnSync('mkfifo', [path]);
  if (r.status !== 0) throw new Error(`mkfifo ${path}: ${r.stderr.toString()}`);
  expect(lstatSync(path).isFIFO()).toBe(true);
}

/** The valve for `fifo` (see the file comment): its own process group, stopped by its id. */
function valve(fifo: string, dir: string): Valve {
  const marker = join(dir, `valve-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  // the marker first, then the writes: a reader that blocked can only return after the marker exists.
  // A write to a reader that already left is EPIPE, ignored; the loop lets every blocked open return.
  const script = `trap '' PIPE; sleep ${VALVE_S}; : > "$1"; while :; do printf '{}' > "$2" 2>/dev/null; sleep 0.05; done`;
  const child: ChildProcess = spawn('sh', ['-c', script, 'valve', marker, fifo], { detached: true, stdio: 'ignore' });
  return {
    marker,
    stop() {
      rmSync(fifo, { force: true });
      if (child.pid !== undefined && child.exitCode === null) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };
}

const valves: Valve[] = [];
const open = (fifo: string, dir: string): Valve => {
  const v = valve(fifo, dir);
  valves.push(v);
  return v;
};

describe('a FIFO in the MES inbox, on the real daemon', () => {
  let node: ApiNode;
  beforeAll(async () => {
    node = await startApiNode({ timeScale: 600, tablets: 30_000, memory: true });
  });
  afterAll(async () => {
    // the daemon stops first: were it blocked on the FIFO, the running valve lets each open return
    await node?.close();
    for (const v of valves.splice(0)) v.stop();
  });

  it('POST /runs for a batch whose record is a FIFO is refused at once naming the file (LK_BATCH_RECORD_INVALID); /healthz answers while nobody writes it; nothing starts', async () => {
    const token = await signIn(node.url, 'o.operator', node.passwords.get('o.operator')!);
    const fifo = join(mesInboxDir(join(node.dir, 'data')), 'acme-pharma', 'B-9077.json');
    mkfifo(fifo);
    const v = open(fifo, node.dir);

    const started = call(node.url, 'POST', '/v1/tenants/acme-pharma/runs', { token, body: { request: 'run batch B-9077 on line-3' } });
    const health = await call(node.url, 'GET', '/healthz');
    const writtenAtHealth = existsSync(v.marker);
    const run = await started;
    const writtenAtRun = existsSync(v.marker);

    expect(health.status).toBe(200);
    expect(writtenAtHealth).toBe(false);
    expect(writtenAtRun).toBe(false);
    expect(run.status).toBe(422);
    expect(run.type).toContain('application/problem+json');
    expect(run.body.code).toBe('LK_BATCH_RECORD_INVALID');
    expect(run.body.detail).toContain('acme-pharma/B-9077.json');
    expect(run.body.detail).toMatch(/FIFO/);
    // nothing started and the FIFO is left where it is for a person to look at
    const runs = await call(node.url, 'GET', '/v1/tenants/acme-pharma/runs', { token });
    expect(JSON.stringify(runs.body)).not.toContain('B-9077');
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect((await call(node.url, 'GET', '/healthz')).status).toBe(200);
    expect(existsSync(v.marker)).toBe(false);
  });
});

describe('a FIFO in the folders, at the connector', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'lk-fifo-'));
  });
  afterEach(() => {
    for (const v of valves.splice(0)) v.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('MES: list reports the FIFO as invalid and read refuses it, both before anyone writes it', () => {
    const mes = openFolderMes(dataDir, { pollMs: 20, fsWatch: false });
    try {
      mkdirSync(join(mesInboxDir(dataDir), 'acme-pharma'), { recursive: true });
      const fifo = join(mesInboxDir(dataDir), 'acme-pharma', 'B-9078.json');
      mkfifo(fifo);
      const v = open(fifo, dataDir);
      const listed = mes.list('acme-pharma').find((l) => l.batch === 'B-9078');
      const code = codeOf(() => mes.read('acme-pharma', 'B-9078'));
      expect(existsSync(v.marker)).toBe(false);
      expect(listed).toMatchObject({ valid: false, sha256: null });
      expect(listed!.error).toMatch(/acme-pharma\/B-9078\.json: is a FIFO/);
      expect(code).toBe('LK_BATCH_RECORD_INVALID');
    } finally {
      mes.close();
    }
  });

  it('LIMS: results skip the FIFO and problems name it, before anyone writes it; a real result beside it is read', () => {
    const lims = openFolderLims(dataDir, { pollMs: 20, fsWatch: false });
    try {
      const dir = join(limsResultsDir(dataDir), 'acme-pharma');
      mkdirSync(dir, { recursive: true });
      const fifo = join(dir, 'assay-B-1042.json');
      mkfifo(fifo);
      const v = open(fifo, dataDir);
      const results = lims.results('acme-pharma', 'B-1042');
      const problems = lims.problems('acme-pharma');
      expect(existsSync(v.marker)).toBe(false);
      expect(results).toEqual([]);
      expect(problems).toEqual([{ tenant: 'acme-pharma', file: 'acme-pharma/assay-B-1042.json', sha256: null, error: expect.stringMatching(/^acme-pharma\/assay-B-1042\.json: is a FIFO \(named pipe\), not a regular file/) }]);
    } finally {
      lims.close();
    }
  });

  it('a directory named like a document is refused the same way, naming what it is', () => {
    const mes = openFolderMes(dataDir, { pollMs: 20, fsWatch: false });
    try {
      mkdirSync(join(mesInboxDir(dataDir), 'acme-pharma', 'B-9079.json'), { recursive: true });
      const listed = mes.list('acme-pharma').find((l) => l.batch === 'B-9079');
      expect(listed!.error).toMatch(/is a directory, not a regular file/);
      expect(codeOf(() => mes.read('acme-pharma', 'B-9079'))).toBe('LK_BATCH_RECORD_INVALID');
    } finally {
      mes.close();
    }
  });
});
