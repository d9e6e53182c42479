/**
 * A real daemon on the embedded default (plant simulator on free loopback ports, SQLite in a temp dir) with its
 * REST API on 127.0.0.1 port 0, and a small HTTP client over Node's fetch: JSON calls, sign-in, and a
 * server-sent-events reader that parses the stream as a browser's EventSource would.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfigFile } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import type { Plant } from '../../connectors/sim/plant.js';
import { firstStart, ownPassword, TEST_HASH_LOG2N, type FirstStartUser } from './first-start.js';
import { every, systemClock } from '../../src/clock.js';
import { heartbeating, plantOf, resumeMarginalBlend } from './run-site.js';
import { VIRTUAL_T0, virtualLine, type VirtualLine } from './virtual-line.js';
import { openApiCheckOn, openApiOf } from './openapi-check.js';

export interface ApiNode {
  readonly daemon: Daemon;
  /** `virtual`: the node's virtual time and its plant (test/helpers/virtual-line.ts). */
  readonly line?: VirtualLine;
  /** The simulated plant the daemon supervises (over OPC UA and Modbus, or in memory). */
  readonly plant: Plant;
  readonly url: string;
  readonly dir: string;
  /**
   * Passwords of the demo identities, by user id: each user's own, chosen at the first sign-in in place of the
   * one-time password the daemon gave (through the real routes, as `linekeeper login` does).
   */
  readonly passwords: ReadonlyMap<string, string>;
  /** The one-time passwords the daemon gave (already replaced: they no longer sign in). */
  readonly oneTimePasswords: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

/**
 * Start the daemon with its API. `timeScale` speeds the simulator up (a full run takes well under a minute at
 * 300 with a small batch); `tablets` shrinks the sample batch B-1042; `site` edits the site file's text (and may
 * write files beside it, in `dir`); `processMetrics` adds Node's process metrics to GET /metrics, as `linekeeper serve` does.
 * `virtual` runs the daemon on a virtual line (its own clock and in-memory plant) starting at `t0` (default
 * VIRTUAL_T0; `Date.now()` for a node whose clients compare its times with their own wall clock, as the CLI and the
 * console do with a session's expiry: a paced line then runs ahead of them, never behind). Its first start is the
 * run's template made at the hour `t0` falls in, so the nodes of one hour share it. `memory` keeps the wall clock
 * but puts the plant in this process behind the in-memory connectors (no OPC UA or Modbus servers): for tests of the
 * REST surface, not of the protocols (those run against the real servers: connectors, serve, run-renamed-site…).
 */
export async function startApiNode(opts: { timeScale?: number; tablets?: number; pollMs?: number; site?: (yaml: string, dir: string) => string; processMetrics?: boolean; virtual?: boolean; t0?: number; memory?: boolean; heldBlends?: 'resume' | 'leave' } = {}): Promise<ApiNode> {
  const dir = mkdtempSync(join(tmpdir(), 'lk-api-'));
  cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
  cpSync(join(defaultConfigFile(), '..', 'batches'), join(dir, 'batches'), { recursive: true });
  if (opts.tablets !== undefined) {
    const f = join(dir, 'batches/acme-pharma/B-1042.json');
    const rec = JSON.parse(readFileSync(f, 'utf8')) as { batch_size: { tablets: number } };
    rec.batch_size.tablets = opts.tablets;
    writeFileSync(f, JSON.stringify(rec));
  }
  const site = relaxedWatchdog(readFileSync(defaultConfigFile(), 'utf8').replace('time_scale: 60', `time_scale: ${opts.timeScale ?? 60}`));
  // on virtual time, paced far faster than the wall clock, a token of 15 virtual minutes would lapse in seconds of the
  // test: a virtual node's tokens and sessions last a virtual day and a week (expiry is tested on the wall clock)
  const edited = opts.site ? opts.site(site, dir) : site;
  const lifetimes = '  token_ttl_s: 86400\n  session_max_s: 604800\n';
  const timed = !opts.virtual ? edited : /^api:\n/m.test(edited) ? edited.replace(/^api:\n/m, `api:\n${lifetimes}`) : `${edited}\napi:\n${lifetimes}`;
  writeFileSync(join(dir, 'site.yaml'), timed);
  const files = { config: join(dir, 'site.yaml'), data: join(dir, 'data') };
  const t0 = opts.t0 ?? VIRTUAL_T0;
  const line = opts.virtual ? virtualLine(files, { t0 }) : undefined;
  const copied = await firstStart(files.config, files.data, line ? Math.floor(t0 / 3_600_000) * 3_600_000 : 'wall', { ownPasswords: true });
  const extra = {
    api: { host: '127.0.0.1', port: 0 },
    passwordHashLog2N: TEST_HASH_LOG2N,
    ...(opts.memory ? { embeddedSimulator: 'memory' as const } : {}),
    ...(opts.pollMs !== undefined ? { pollMs: opts.pollMs } : {}),
    ...(opts.processMetrics ? { processMetrics: true } : {}),
  };
  const daemon = line ? await line.boot(extra) : await startDaemon({ configFile: files.config, dataDir: files.data, logger: silentLogger, ...extra });
  // a virtual line's first seconds: the connectors' first reads and the PLCs' first heartbeats
  await line?.advance(2_000);
  const url = daemon.ready.api!;
  // each demo user has replaced the one-time password (in the run's template; else here, all together: the plant is
  // running meanwhile)
  const demo: readonly FirstStartUser[] = copied ?? daemon.demoUsers;
  const passwords = new Map(await Promise.all(demo.map(async (u): Promise<[string, string]> => [u.id, u.own ?? (await chooseOwnPassword(url, u.id, u.password))])));
  // the process engineer at the line: a blend held at its target revolutions by the statistics of the scans read is
  // resumed (resumeMarginalBlend, test/helpers/run-site.ts; at most twice a run); `heldBlends: 'leave'` leaves it
  // HELD. A test's run on a paced or wall-clock line meets that hold about one batch in twenty, and a client that
  // follows the run to its gate or its end (an SDK stream, the CLI, the console) would otherwise wait for ever.
  // The same process engineer resumes, once a run, a press step held because the twin no longer predicted the press
  // at its first setpoints (resumeLostTwin below): on a paced line the plant's draws vary with the clients' timing,
  // and some batches' granules press lighter than the twin was fitted on.
  let tending = false;
  const heldRuns = daemon.store.db.prepare("SELECT tenant, id FROM run WHERE status = 'HELD'");
  const keep = (): void => {
    // a test may stop the node's daemon itself (and start another on its data): nothing is kept then
    if (!daemon.store.db.open) return;
    // the held runs (the run store's `unfinished()` lists PENDING, RUNNING and APPROVAL only)
    for (const r of heldRuns.all() as { tenant: string; id: string }[]) {
      resumeMarginalBlend(daemon, r.tenant, r.id);
      if (!tending && lostTwinHold(daemon, r.tenant, r.id)) {
        tending = true;
        void resumeLostTwin(node, r.tenant, r.id).catch(() => undefined).finally(() => { tending = false; });
      }
    }
  };
  const stopKeeping = opts.heldBlends === 'leave' ? () => undefined : every(line?.clock ?? systemClock, line ? 5_000 : 1_000, keep);
  const node: ApiNode = {
    daemon, url, dir, passwords, plant: plantOf(daemon), oneTimePasswords: new Map(demo.map((u) => [u.id, u.password])), ...(line ? { line } : {}),
    async close() {
      stopKeeping();
      await daemon.stop('test done');
      line?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return node;
}

/** The run's press step is HELD, at its first attempt, because the twin no longer predicted the press (R8). */
function lostTwinHold(d: ApiNode['daemon'], tenant: string, id: string): boolean {
  const run = d.engine.get(tenant, id);
  const held = run.status === 'HELD' ? run.steps.find((s) => s.status === 'HELD') : undefined;
  return held?.name === 'compress.press' && held.attempt === 1 && /twin model lost: LK_MODEL_FIDELITY/.test(held.detail);
}

/**
 * What a process engineer does when the twin is lost at the press (R8: the line reverted to its LKG recipes, the
 * twin's agents at L0, an open MODEL_FIDELITY exception for QA): re-arm the PLCs at the HMI once heartbeats reach
 * them, and resume the run with a reason. The batch goes on without the twin's agents and its exceptions stay for
 * QA. Used by the nodes' keeper; a hold of any other kind, or a second one, is left.
 */
export async function resumeLostTwin(node: ApiNode, tenant: string, id: string): Promise<boolean> {
  if (!lostTwinHold(node.daemon, tenant, id)) return false;
  const token = await signIn(node.url, 'p.bianchi', node.passwords.get('p.bianchi')!);
  await rearmLost(node, tenant, token, (id) => `${id} reverted when the twin was lost; checked, supervision may resume`);
  const r = await call(node.url, 'POST', `/v1/tenants/${tenant}/runs/${id}/resume`, { token, body: { reason: 'the twin no longer predicted the press (MODEL_FIDELITY, open for QA): PLCs re-armed, the batch goes on with the twin agents at L0' } });
  return r.status === 200;
}

/**
 * The simulated PLCs' watchdog of a test site whose subject is not the watchdog: 10 s instead of the shipped 3 s.
 * Vitest runs several daemons at once on a CI machine of two cores; a heartbeat held past 3 s there reverted a PLC
 * to its LKG recipe at random and the next run was refused (LK_LINE_NOT_READY). The watchdog itself is tested
 * with its own timeouts (daemon-watchdog, sim-watchdog, run-fault, the fault loops and the bench).
 */
export function relaxedWatchdog(yaml: string): string {
  const out = yaml.replace(/^(\s*)watchdog_timeout_ms: 3000$/m, '$1watchdog_timeout_ms: 10000');
  if (out === yaml) throw new Error('config/site.yaml no longer says watchdog_timeout_ms: 3000; update relaxedWatchdog');
  return out;
}

/**
 * Replace a password someone else set (a one-time password) by one of the person's own: sign in, then POST
 * /v1/auth/password. @returns the new password. @throws when the daemon refuses either step.
 */
export async function chooseOwnPassword(url: string, user: string, current: string): Promise<string> {
  const next = ownPassword(user, current);
  const t = await call(url, 'POST', '/v1/auth/token', { body: { user, password: current } });
  if (t.status !== 200) throw new Error(`sign-in of ${user}: ${t.status} ${JSON.stringify(t.body)}`);
  const c = await call(url, 'POST', '/v1/auth/password', { token: t.body.token as string, body: { current, password: next } });
  if (c.status !== 200) throw new Error(`password change of ${user}: ${c.status} ${JSON.stringify(c.body)}`);
  return next;
}

export interface Reply {
  readonly status: number;
  readonly type: string;
  readonly headers: Headers;
  /** Parsed JSON body (undefined when the body is empty or not JSON). */
  readonly body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * One HTTP call; `body` is sent as JSON unless `raw` gives the bytes and content type. Every response is checked
 * against the daemon's OpenAPI document (openapi-check.ts), and one that departs from it throws — unless
 * `LK_CHECK_OPENAPI=0` (with a reason, see openApiCheckOn), or the call names in `unchecked` why its answer may
 * depart (a test of the checker itself, say).
 */
export async function call(
  url: string,
  method: string,
  path: string,
  o: { token?: string; body?: unknown; raw?: { data: string; type: string }; headers?: Record<string, string>; unchecked?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.token) headers['authorization'] = `Bearer ${o.token}`;
  let data: string | undefined;
  if (o.raw) {
    data = o.raw.data;
    headers['content-type'] = o.raw.type;
  } else if (o.body !== undefined) {
    data = JSON.stringify(o.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(`${url}${path}`, { method, headers, ...(data !== undefined ? { body: data } : {}) });
  const text = await res.text();
  let body: unknown;
  try {
    body = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const type = res.headers.get('content-type') ?? '';
  if (o.unchecked !== undefined && !o.unchecked.trim()) throw new Error('call(): `unchecked` needs the reason the answer is not checked');
  if (o.unchecked === undefined && openApiCheckOn()) (await openApiOf(url)).assert(method, path, { status: res.status, type, text });
  return { status: res.status, type, headers: res.headers, body };
}

/** Sign in; the bearer token. */
export async function signIn(url: string, user: string, password: string): Promise<string> {
  const r = await call(url, 'POST', '/v1/auth/token', { body: { user, password } });
  if (r.status !== 200) throw new Error(`sign-in of ${user} failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.token as string;
}

export interface SseEvent {
  readonly id?: string;
  readonly event: string;
  readonly data: string;
}

/**
 * An open event stream. `events` fills as events arrive; `next(n)` waits for the n-th; `done` resolves when the
 * server ends the stream (or `abort()` is called), and rejects when the answer departs from the OpenAPI document. Comments (keep-alives) are counted, not returned. The answer's
 * status and media type (and a refusal's body) are checked against the OpenAPI document as call() checks.
 */
export class SseReader {
  readonly events: SseEvent[] = [];
  comments = 0;
  status = 0;
  ended = false;
  /** Why the answer departs from the OpenAPI document (then the stream is not read, and next() throws it). */
  departure: Error | undefined;
  readonly done: Promise<void>;
  private readonly ctl = new AbortController();
  private waiters: (() => void)[] = [];

  constructor(url: string, token: string, headers: Record<string, string> = {}) {
    this.done = this.read(url, token, headers).catch((e: unknown) => {
      // an answer that departs from the OpenAPI document: next() throws it, and done rejects with it (a test that
      // awaits neither still fails, on the unhandled rejection)
      this.departure = e instanceof Error ? e : new Error(String(e));
      throw this.departure;
    }).finally(() => {
      this.ended = true;
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private async read(url: string, token: string, headers: Record<string, string>): Promise<void> {
    let res: Response;
    try {
      res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers }, signal: this.ctl.signal });
    } catch {
      return;
    }
    this.status = res.status;
    const type = res.headers.get('content-type') ?? '';
    if (res.status !== 200 || !res.body) {
      const text = await res.text().catch(() => '');
      await this.conform(url, { status: res.status, type, text });
      return;
    }
    // the stream's status and media type (its events are not a JSON body the document could describe)
    await this.conform(url, { status: res.status, type, text: '' });
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let id: string | undefined;
          let event = 'message';
          const data: string[] = [];
          let fields = 0;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) {
              this.comments++;
              continue;
            }
            const c = line.indexOf(':');
            const name = c < 0 ? line : line.slice(0, c);
            const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
            if (name === 'id') id = value;
            else if (name === 'event') event = value;
            else if (name === 'data') data.push(value);
            else continue;
            fields++;
          }
          if (fields > 0 && data.length > 0) this.events.push({ ...(id !== undefined ? { id } : {}), event, data: data.join('\n') });
          this.wake();
        }
      }
    } catch {
      // aborted by the test
    }
  }

  /** Check the answer against the daemon's OpenAPI document, as call() does; a departure ends the stream and fails next() and done. */
  private async conform(url: string, res: { status: number; type: string; text: string }): Promise<void> {
    if (!openApiCheckOn()) return;
    const u = new URL(url);
    (await openApiOf(u.origin)).assert('GET', u.pathname, res);
  }

  /** Wait until at least `n` events arrived (or the stream ended). @throws the OpenAPI departure of the answer. */
  async next(n: number): Promise<SseEvent[]> {
    while (this.events.length < n && !this.ended) await new Promise<void>((r) => this.waiters.push(r));
    if (this.departure) throw this.departure;
    return this.events;
  }

  abort(): void {
    this.ctl.abort();
  }
}

/** Poll until `probe` holds (no timing is asserted: only that it happens before the test's own time-out). */
export async function until<T>(probe: () => Promise<T | undefined>, everyMs = 200, line?: VirtualLine, guard?: { readonly withinMs: number; readonly state: () => string }): Promise<T> {
  const deadline = guard ? performance.now() + guard.withinMs : Infinity;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    // a hang guard, not a speed limit: a wait that does not end fails saying where things stand
    if (performance.now() > deadline) throw new Error(`not reached within ${guard!.withinMs / 1000} s of the wall clock; ${guard!.state()}`);
    // on a virtual line, its time passes instead of the wall clock's
    if (line) await line.advance(everyMs);
    else await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Re-arm, as the process engineer `by` (signed in with `token`), every PLC of the line that is LOST, then wait until
 * the line is ready for a run of `tenant`. A PLC whose own watchdog reverted it (a heartbeat late past its timeout
 * on a loaded machine) stays LOST until a person re-arms it, and no run starts meanwhile: a test that starts a run
 * after another has run does what a site does. Returns the equipment re-armed.
 */
export async function rearmLostPlcs(node: ApiNode, tenant: string, token: string): Promise<string[]> {
  const lost = await rearmLost(node, tenant, token, (id) => `${id} reverted by its own watchdog; checked, supervision may resume`);
  await until(async () => ((await call(node.url, 'GET', `/v1/tenants/${tenant}/line/readiness`, { token })).body.ready === true ? true : undefined), 100, node.line);
  return lost;
}

/** Re-arm over REST every PLC of the line that is LOST, each once linekeeper's heartbeats reach it; returns them. */
async function rearmLost(node: ApiNode, tenant: string, token: string, reason: (id: string) => string): Promise<string[]> {
  const { line, plant } = node;
  const now = (): number => line?.clock.now() ?? Date.now();
  const lost = node.daemon.loaded.config.equipment.map((e) => e.id).filter((id) => plant.supervisor(id).state === 'LOST');
  for (const id of lost) {
    // the PLC refuses a re-arm while no heartbeat arrives (its rule): wait for linekeeper's heartbeats to reach it
    await until(async () => (heartbeating(plant.supervisor(id), now()) ? true : undefined), 100, line);
    const r = await call(node.url, 'POST', `/v1/tenants/${tenant}/line/equipment/${id}/rearm`, { token, body: { reason: reason(id) } });
    if (r.status !== 200) throw new Error(`re-arm of ${id}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  return lost;
}

/** Where the daemon's runs of `tenant` stand: each run's status and every step not SUCCEEDED or PENDING, with its detail. */
export function runsNow(node: ApiNode, tenant: string): string {
  const runs = node.daemon.engine.list(tenant).map((r) => `${r.id} ${r.status}: ${r.steps.filter((x) => x.status !== 'SUCCEEDED' && x.status !== 'PENDING').map((x) => `${x.seq} ${x.status} (attempt ${x.attempt}) ${x.detail}`).join(' | ')}`);
  return `the daemon's runs: ${runs.join('; ') || 'none'}`;
}
