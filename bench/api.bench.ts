/**
 * The REST API against bare peers in the same process, on a real daemon (embedded default: plant simulator,
 * connectors, SQLite) with a run persisted as the engine starts one and a tool-call log:
 *
 * 1. GET /runs/{id} (bearer token, guard, params validation, the run's view from the engine's view cache —
 *    encoded through the zod response schema once per state change, running steps' durations spliced in per
 *    request) vs a bare fastify route returning the same JSON object (fastify serialises it per request), both
 *    loaded by autocannon in a child process (10 connections); req/s and p99. Target ≥ 0.7 × the bare route.
 *    Also against a stricter peer: the bare route sending the same bytes pre-serialised. All three answer the
 *    same bytes (checked before loading).
 * 2. Server-sent events: 200 concurrent streams on the run; delay from a tool-call line's commit (the engine's
 *    onToolCall, called after the commit, first listener) to its arrival at each client (clients in a child
 *    process). Peer: the same commits broadcast by a bare fastify SSE route to 200 clients; rounds alternate, the
 *    median round's p99 of each side is reported. Target p99 < 50 ms, ≥ 0.8 × the bare broadcast.
 * 3. Token verification per request: `Identity.resolve` (SHA-256 of the opaque token, the in-memory session map,
 *    the cached user — dropped when users change, here or on another connection, seen through PRAGMA
 *    data_version — so a disabled or locked account stops at once) vs a raw Map lookup.
 * 4. SSO: a provider's ES256 JWT verified by the daemon's `OidcVerifier` (jose + claim mapping) and as the guard
 *    sees it (`Identity.authenticate`: verified once, then cached until it expires or is signed out), both vs
 *    jose's `jwtVerify` bare.
 *
 * Rounds alternate ours/peer so drift on a noisy two-core box hits both alike. Run: npx tsx bench/api.bench.ts
 */
import { fork, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { z } from 'zod';
import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { createApi, Identity, OidcVerifier } from '../src/api/index.js';
import { RunView as RunViewSchema } from '../src/api/schemas.js';
import { Oidc } from '../src/config/schema.js';
import { systemClock } from '../src/clock.js';
import { defaultConfigFile } from '../src/config/load.js';
import { startDaemon } from '../src/daemon.js';
import { composePlan } from '../src/domain/run.js';
import { canonical, sha256Hex } from '../src/engine/run/approval.js';
import type { RunView } from '../src/engine/run/engine.js';
import { StepContext } from '../src/engine/run/step-context.js';
import { silentLogger } from '../src/log.js';
import type { ToolCallRecord } from '../src/store/run-store.js';
import { opsPerSecond, percentile, report } from './lib.js';

const HTTP_ROUNDS = 2;
const HTTP_SECONDS = 8;
const STREAMS = 200;
const LINES = 200;
const LINE_EVERY_MS = 20;
const SSE_ROUNDS = 3;
const TOKEN_ROUNDS = 3;

const dir = mkdtempSync(join(tmpdir(), 'lk-bench-api-'));
cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
cpSync(join(defaultConfigFile(), '..', 'batches'), join(dir, 'batches'), { recursive: true });
writeFileSync(join(dir, 'site.yaml'), readFileSync(defaultConfigFile(), 'utf8'));
const daemon = await startDaemon({ configFile: join(dir, 'site.yaml'), dataDir: join(dir, 'data'), logger: silentLogger, api: { host: '127.0.0.1', port: 0 } });
const identity = daemon.identity!;
const user = daemon.demoUsers.find((u) => u.id === 'a.ricci')!;
// the demo's one-time password is someone else's choice: its owner changes it before the session may do anything
const own = `bench ${user.id}: a passphrase of the owner's own choosing`;
await identity.changePassword(user.id, user.password, own);
const { token } = await identity.signIn(user.id, own);
const auth = { authorization: `Bearer ${token}` };

// a run as the engine persists one at its start (RUNNING, so its stream stays open), without an execution behind it
const engine = daemon.engine;
const record = engine.options.mes.read('acme-pharma', 'B-1042') as Record<string, unknown>;
const runId = `run_${'be'.repeat(10)}`;
daemon.store.tx((t) => {
  engine.runs.insertRun(t, {
    id: runId, tenant: 'acme-pharma', batch: 'B-1042', line: 'line-3', product: String(record['product']), tooling: String(record['tooling']), goal: 'benchmark',
    request: { text: 'run batch B-1042 on line-3' }, limits: {}, autonomy: 'L3', record, recordSha: sha256Hex(canonical(record)), seed: 1, startedBy: 'o.operator', createdAt: Date.now(),
  }, composePlan());
});
daemon.store.tx((t) => engine.setRun(t, engine.runs.runById(runId)!, 'RUNNING', null, 'system', 'benchmark'));
const step = new StepContext(engine.host, engine.runs.runById(runId)!, composePlan()[4]!, new AbortController().signal, {});
const line = (i: number): void => step.line(i % 2 === 0 ? 'call' : 'ok', step.step.tool, step.step.agent, i % 2 === 0 ? { args: { setpoint: 'press.MainForce', value: '12.5 kN', i } } : { summary: 'written 12.5 kN, read back 12.5 kN', result: { i, verified: true } });
for (let i = 0; i < 20; i++) line(i);

// ── 1. GET /runs/{id} ────────────────────────────────────────────────────────────────────────────────────────
const path = `/v1/tenants/acme-pharma/runs/${runId}`;
const body = await (await fetch(`${daemon.ready.api}${path}`, { headers: auth })).text();
const view = JSON.parse(body) as unknown;
const bare = Fastify({ logger: false });
bare.get('/v1/tenants/:tenant/runs/:id', async () => view);
const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });
// the stricter peer: no serialisation at all, as the view cache's body needs none while the run does not change
const bareText = Fastify({ logger: false });
bareText.get('/v1/tenants/:tenant/runs/:id', (_req, reply) => void reply.type('application/json; charset=utf-8').send(body));
const bareTextUrl = await bareText.listen({ host: '127.0.0.1', port: 0 });
for (const [url, headers] of [[daemon.ready.api, auth], [bareUrl, {}], [bareTextUrl, {}]] as const) {
  const res = await fetch(`${url}${path}`, { headers });
  const text = await res.text();
  if (text !== body || res.headers.get('content-type') !== 'application/json; charset=utf-8') throw new Error(`${url} answers other bytes or another content type than the API`);
}

const autocannonPath = createRequire(import.meta.url).resolve('autocannon');
interface Load { rps: number; p50: number; p99: number; bad: number }
/** autocannon in a child process (its own CPU time is not the server's event loop). */
function cannon(url: string, headers: Record<string, string>, seconds: number): Promise<Load> {
  const script = `require(${JSON.stringify(autocannonPath)})({ url: ${JSON.stringify(url)}, connections: 10, duration: ${seconds}, headers: ${JSON.stringify(headers)} }, (e, r) => {
    if (e) throw e;
    process.stdout.write(JSON.stringify({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, bad: r.non2xx + r.errors + r.timeouts }));
  })`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Load) : reject(new Error(`autocannon exited ${code}`))));
  });
}

await cannon(`${daemon.ready.api}${path}`, auth, 2);
await cannon(`${bareUrl}${path}`, {}, 2);
const ours: Load[] = [];
const peer: Load[] = [];
const peerText: Load[] = [];
for (let r = 0; r < HTTP_ROUNDS; r++) {
  ours.push(await cannon(`${daemon.ready.api}${path}`, auth, HTTP_SECONDS));
  peer.push(await cannon(`${bareUrl}${path}`, {}, HTTP_SECONDS));
  peerText.push(await cannon(`${bareTextUrl}${path}`, {}, HTTP_SECONDS));
}
if ([...ours, ...peer, ...peerText].some((l) => l.bad > 0)) throw new Error(`non-2xx answers or errors under load: ${JSON.stringify({ ours, peer, peerText })}`);
const best = (ls: Load[]): Load => ls.reduce((a, b) => (b.rps > a.rps ? b : a));
const us = (ops: number): number => 1e6 / ops;
const encode = (v: RunView): RunView => z.encode(RunViewSchema, v as z.output<typeof RunViewSchema>) as RunView;
report({
  name: 'REST GET /runs/{id}', unit: 'req/s', higherIsBetter: true,
  ours: { label: 'linekeeper API (token, guard, view cache encoded by the zod schema per change)', value: best(ours).rps },
  peer: { label: 'bare fastify route, same JSON object', value: best(peer).rps },
  target: 'ours ≥ 0.7 × bare',
  extra: {
    'ours p50 ms': best(ours).p50, 'ours p99 ms': best(ours).p99, 'peer p99 ms': best(peer).p99, connections: 10,
    'ours req/s by round': ours.map((l) => Math.round(l.rps)).join('/'), 'peer req/s by round': peer.map((l) => Math.round(l.rps)).join('/'),
    'view from the cache µs': us(await opsPerSecond(() => engine.get('acme-pharma', runId), 500)),
    'body from the cache µs': us(await opsPerSecond(() => engine.viewJson('acme-pharma', runId, encode), 500)),
    'view built from the store µs': us(await opsPerSecond(() => engine.view(engine.runs.run('acme-pharma', runId)!), 500)),
    'zod encode + stringify µs': us(await opsPerSecond(() => JSON.stringify(encode(engine.get('acme-pharma', runId))), 500)),
  },
});
// a running run has a running step, whose duration is spliced into the cached body at every request
const steps05 = engine.runs.steps(runId).find((x) => x.seq === '05')!;
daemon.store.tx((t) => engine.setStep(t, engine.runs.runById(runId)!, steps05, 'RUNNING', 'system', '', { attempt: 1, startedAt: Date.now() }));
const runningBodyUs = us(await opsPerSecond(() => engine.viewJson('acme-pharma', runId, encode), 500));
process.stdout.write(`GET /runs/{id} body from the cache with a running step: ${runningBodyUs.toPrecision(3)} µs\n`);
report({
  name: 'REST GET /runs/{id}, stricter peer', unit: 'req/s', higherIsBetter: true,
  ours: { label: 'linekeeper API (as above)', value: best(ours).rps },
  peer: { label: 'bare fastify route sending the same bytes pre-serialised', value: best(peerText).rps },
  extra: { 'peer p99 ms': best(peerText).p99, 'peer req/s by round': peerText.map((l) => Math.round(l.rps)).join('/') },
});

// ── 2. SSE delivery ──────────────────────────────────────────────────────────────────────────────────────────
/** The system-wide monotonic clock (CLOCK_MONOTONIC), in ms: the client process stamps arrivals on the same one. */
const stamp = (): number => Number(process.hrtime.bigint()) / 1e6;
const commits = new Map<number, number>();
// registered before any stream, so it runs first after each commit: the commit time, before any delivery
engine.onToolCall((row: ToolCallRecord) => {
  if (row.run === runId) commits.set(row.id, stamp());
});
const api = await createApi({ daemon, clock: systemClock, users: identity, streams: { perUser: STREAMS + 10 } });
const apiUrl = await api.listen('127.0.0.1', 0);

const peerClients = new Set<import('node:http').ServerResponse>();
const sse = Fastify({ logger: false });
sse.get('/stream', (_req, reply) => {
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  reply.raw.write('retry: 2000\n\n');
  peerClients.add(reply.raw);
  reply.raw.on('close', () => peerClients.delete(reply.raw));
});
const sseUrl = await sse.listen({ host: '127.0.0.1', port: 0 });
let broadcast = false;
engine.onToolCall((row: ToolCallRecord) => {
  if (!broadcast) return;
  const text = `id: ${row.id}\nevent: ${row.kind}\ndata: ${JSON.stringify(row)}\n\n`;
  for (const c of peerClients) c.write(text);
});

/** Open STREAMS clients in a child process, commit LINES lines, and the delays (ms) of every line at every client. */
async function delivery(url: string, headers: Record<string, string>): Promise<number[]> {
  const first = engine.toolCalls('acme-pharma', runId).at(-1)!.id;
  const clients = fork(fileURLToPath(new URL('./sse-clients.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = new Promise<void>((resolve, reject) => {
    clients.once('message', () => resolve());
    clients.once('exit', (code) => reject(new Error(`the SSE clients exited (${code})`)));
  });
  clients.send({ url: url.replace('{after}', String(first)), headers, n: STREAMS });
  await ready;
  const done = new Promise<Record<string, number[]>>((resolve) => clients.once('message', (m: { times: Record<string, number[]> }) => resolve(m.times)));
  for (let i = 0; i < LINES; i++) {
    line(i);
    await new Promise((r) => setTimeout(r, LINE_EVERY_MS));
  }
  clients.send({ until: first + LINES });
  const times = await done;
  clients.removeAllListeners('exit');
  clients.kill();
  const delays: number[] = [];
  for (const [id, ts] of Object.entries(times)) {
    const at = commits.get(Number(id));
    if (at === undefined || Number(id) <= first) continue;
    if (ts.length !== STREAMS) throw new Error(`line ${id} reached ${ts.length} of ${STREAMS} streams`);
    for (const t of ts) delays.push(t - at);
  }
  if (delays.length !== LINES * STREAMS) throw new Error(`${delays.length} deliveries, expected ${LINES * STREAMS}`);
  return delays;
}

// rounds alternate ours/peer so a load swing on the shared machine hits both; the round with the median p99 is reported
const oursRounds: number[][] = [];
const peerRounds: number[][] = [];
for (let r = 0; r < SSE_ROUNDS; r++) {
  oursRounds.push(await delivery(`${apiUrl}${path}/stream?after={after}`, auth));
  broadcast = true;
  peerRounds.push(await delivery(`${sseUrl}/stream`, {}));
  broadcast = false;
}
const medianRound = (rounds: number[][]): number[] => [...rounds].sort((a, b) => percentile(a, 99) - percentile(b, 99))[Math.floor(rounds.length / 2)]!;
const oursSse = medianRound(oursRounds);
const peerSse = medianRound(peerRounds);
const p99s = (rounds: number[][]): string => rounds.map((d) => percentile(d, 99).toFixed(1)).join('/');
report({
  name: `SSE delivery, ${STREAMS} streams`, unit: 'ms p99', higherIsBetter: false,
  ours: { label: 'GET /runs/{id}/stream (RunStreams)', value: percentile(oursSse, 99) },
  peer: { label: 'bare fastify SSE broadcast of the same commits', value: percentile(peerSse, 99) },
  target: 'p99 < 50 ms, ≥ 0.8 × the bare broadcast',
  extra: {
    'ours p50 ms': percentile(oursSse, 50), 'peer p50 ms': percentile(peerSse, 50), 'ours max ms': Math.max(...oursSse), 'ours p99 by round': p99s(oursRounds), 'peer p99 by round': p99s(peerRounds),
    rounds: SSE_ROUNDS, lines: LINES, deliveries: oursSse.length, 'line every ms': LINE_EVERY_MS,
  },
});

// ── 3. token verification ────────────────────────────────────────────────────────────────────────────────────
const tokens = new Map([[token, { user: user.id, expiresAt: Date.now() + 60_000 }]]);
let sink = 0;
const oursOps: number[] = [];
const peerOps: number[] = [];
for (let r = 0; r < TOKEN_ROUNDS; r++) {
  oursOps.push(await opsPerSecond(() => void (sink += identity.resolve(token).id.length), 1000));
  peerOps.push(await opsPerSecond(() => void (sink += tokens.get(token)!.user.length), 1000));
}
const nsPerOp = (ops: number[]): number => 1e9 / Math.max(...ops);
report({
  name: 'token verification per request', unit: 'ns/op', higherIsBetter: false,
  ours: { label: 'Identity.resolve (SHA-256, session map, cached user checked against PRAGMA data_version)', value: nsPerOp(oursOps) },
  peer: { label: 'raw Map.get of the token', value: nsPerOp(peerOps) },
  extra: { sink: sink > 0 ? 'ok' : 'none' },
});

// ── 4. SSO: JWT verification ─────────────────────────────────────────────────────────────────────────────────
// a provider key made here, its JWKS as a file; ours = the verifier the daemon uses (jose + claim mapping), and
// Identity.authenticate as a request sees it (verified once, then the cache); peer = jose's jwtVerify, bare
const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'bench', alg: 'ES256', use: 'sig' }] };
writeFileSync(join(dir, 'jwks.json'), JSON.stringify(jwks));
const oidcCfg = Oidc.parse({ issuer: 'https://idp.bench.example/', audience: 'linekeeper', jwks_file: 'jwks.json', role_map: { 'lk-qa': 'qa_reviewer' }, tenants: ['acme-pharma'] });
const verifier = new OidcVerifier(oidcCfg, dir, ['acme-pharma'], systemClock);
const ssoIdentity = new Identity({ store: daemon.store, clock: systemClock, oidc: verifier });
const nowS = Math.floor(Date.now() / 1000);
const jwt = await new SignJWT({ preferred_username: 'q.bench', groups: ['lk-qa'], auth_time: nowS })
  .setProtectedHeader({ alg: 'ES256', kid: 'bench', typ: 'at+jwt' }).setIssuer(oidcCfg.issuer).setAudience('linekeeper').setSubject('bench-sub').setIssuedAt(nowS).setExpirationTime(nowS + 3600).sign(privateKey);
const localSet = createLocalJWKSet(jwks);
const verifyOps: number[] = [];
const cachedOps: number[] = [];
const joseOps: number[] = [];
for (let r = 0; r < TOKEN_ROUNDS; r++) {
  verifyOps.push(await opsPerSecond(async () => void (sink += (await verifier.verify(jwt)).id.length), 1000));
  cachedOps.push(await opsPerSecond(async () => void (sink += (await ssoIdentity.authenticate(jwt)).id.length), 1000));
  joseOps.push(await opsPerSecond(async () => void (sink += String((await jwtVerify(jwt, localSet, { issuer: oidcCfg.issuer, audience: 'linekeeper', algorithms: ['ES256'] })).payload.sub).length), 1000));
}
report({
  name: 'JWT verification (SSO), every request verified', unit: 'ns/op', higherIsBetter: false,
  ours: { label: 'OidcVerifier.verify (jose jwtVerify + claim mapping to role and tenants)', value: nsPerOp(verifyOps) },
  peer: { label: 'jose jwtVerify, bare (ES256, local JWKS)', value: nsPerOp(joseOps) },
});
report({
  name: 'JWT per request (SSO), as the guard sees it', unit: 'ns/op', higherIsBetter: false,
  ours: { label: 'Identity.authenticate (SHA-256 of the token, verified-token cache, sign-out set)', value: nsPerOp(cachedOps) },
  peer: { label: 'jose jwtVerify, bare (ES256, local JWKS)', value: nsPerOp(joseOps) },
  extra: { sink: sink > 0 ? 'ok' : 'none' },
});

await api.close();
await sse.close();
await bare.close();
await bareText.close();
await daemon.stop('benchmark done');
rmSync(dir, { recursive: true, force: true });
