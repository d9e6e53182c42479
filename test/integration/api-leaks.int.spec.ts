/**
 * What the API hands out says nothing of the server and leaves a trace where it must, over real HTTP against a
 * real daemon:
 * - a run's view, its genealogy, its tool-call stream and the audit entries of its release package carry no path of
 *   the server's file system: the package's files are download URLs of the API (which serve them), the entries
 *   name the folder relative to the data directory;
 * - an export of the audit trail (CSV, JSONL bundle, PDF) and a verify are themselves recorded on the tenant's
 *   chain — who, role, format, filter, how many entries, the SHA-256 of the bytes handed out — after the content
 *   was computed (an export never holds its own record); a plain read of the trail is not recorded.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, signIn, SseReader, startApiNode, type ApiNode } from '../helpers/api.js';
import { seedRun } from '../helpers/api-seed.js';

const T = 'acme-pharma';
const A = `/v1/tenants/${T}`;
let node: ApiNode;
const tokens = new Map<string, string>();
const tok = (user: string): string => tokens.get(user)!;
let runId: string;

/** GET with the raw body text (exports are not JSON). */
async function raw(path: string, user: string): Promise<{ status: number; type: string; text: string; bytes: Buffer }> {
  const res = await fetch(`${node.url}${path}`, { headers: { authorization: `Bearer ${tok(user)}` } });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: bytes.toString('utf8'), bytes };
}

interface Entry { seq: number; actor: string; kind: string; action: string; args: Record<string, unknown>; result: Record<string, unknown> }
/** The tenant's audit_access entries, in chain order. */
const accesses = async (): Promise<Entry[]> => (await call(node.url, 'GET', `${A}/audit?kind=audit_access&limit=1000`, { token: tok('a.ricci') })).body.items as Entry[];
const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  node = await startApiNode({ memory: true });
  for (const user of ['p.bianchi', 'a.ricci', 'm.rossi']) tokens.set(user, await signIn(node.url, user, node.passwords.get(user)!));
  // a run that leaves a package behind quickly: seeded RUNNING, then aborted by a person (its "not a release" package)
  runId = seedRun(node.daemon, { tenant: T, batch: 'B-1042', by: 'o.operator' }).id;
  const aborted = await call(node.url, 'POST', `${A}/runs/${runId}/abort`, { token: tok('p.bianchi'), body: { reason: 'leak probe: granulate lot recalled', password: node.passwords.get('p.bianchi') } });
  expect(aborted.status, JSON.stringify(aborted.body)).toBe(200);
}, 180_000);
afterAll(async () => {
  await node?.close();
});

describe('nothing of the server\'s file system in what the API answers', () => {
  it('the run view and the genealogy give the release package as download URLs that serve its files', async () => {
    const dataDir = node.daemon.loaded.dataDir;
    const view = await call(node.url, 'GET', `${A}/runs/${runId}`, { token: tok('a.ricci') });
    expect(view.body.status).toBe('ABORTED');
    expect(view.body.release).toEqual({
      json: `${A}/runs/${runId}/release?file=json`, pdf: `${A}/runs/${runId}/release?file=pdf`, bundle: `${A}/runs/${runId}/release?file=bundle`,
      sha256: { json: expect.stringMatching(/^[0-9a-f]{64}$/), pdf: expect.stringMatching(/^[0-9a-f]{64}$/), bundle: expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    const list = await call(node.url, 'GET', `${A}/runs`, { token: tok('a.ricci') });
    const genealogy = await call(node.url, 'GET', `${A}/runs/${runId}/genealogy`, { token: tok('a.ricci') });
    expect(genealogy.body.release).toEqual(view.body.release);
    for (const [what, body] of [['view', view.body], ['list', list.body], ['genealogy', genealogy.body]] as const) {
      expect(JSON.stringify(body), what).not.toContain(dataDir);
      expect(JSON.stringify(body), what).not.toContain('/releases/');
    }
    // each URL serves the file whose digest the view gives
    for (const file of ['json', 'pdf', 'bundle'] as const) {
      const got = await raw(view.body.release[file], 'a.ricci');
      expect(got.status, file).toBe(200);
      expect(sha256(got.bytes), file).toBe(view.body.release.sha256[file]);
    }
  });

  it('the tool-call stream and the audit entries of the package name its folder relative to the data directory', async () => {
    const dataDir = node.daemon.loaded.dataDir;
    const log = node.daemon.engine.toolCalls(T, runId);
    const stream = new SseReader(`${node.url}${A}/runs/${runId}/stream`, tok('a.ricci'));
    await stream.next(log.length);
    stream.abort();
    const pkg = stream.events.map((e) => JSON.parse(e.data) as { tool?: string; kind?: string; result?: { dir?: string } }).find((l) => l.tool === 'audit.write_release_package' && l.kind === 'ok');
    expect(pkg?.result?.dir).toBe(`releases/${T}/${runId}`);
    expect(stream.events.map((e) => e.data).join('\n')).not.toContain(dataDir);
    const trail = await call(node.url, 'GET', `${A}/audit?run=${runId}&limit=1000`, { token: tok('a.ricci') });
    expect(trail.body.items.length).toBeGreaterThan(3);
    expect(JSON.stringify(trail.body)).not.toContain(dataDir);
  });
});

describe('exports and verifies of the audit trail are recorded; plain reads are not', () => {
  it('[A11.9] a CSV export: who, role, format, filter, entries, the digest of the bytes handed out — after the content, so it never holds its own record', async () => {
    const before = await accesses();
    const csv = await raw(`${A}/audit/export?format=csv&run=${runId}`, 'a.ricci');
    expect(csv.status).toBe(200);
    const rows = csv.text.trimEnd().split('\r\n').slice(1);
    expect(rows.length).toBeGreaterThan(3);
    expect(csv.text).not.toContain('audit.export');
    const after = await accesses();
    expect(after.length).toBe(before.length + 1);
    const e = after.at(-1)!;
    expect(e).toMatchObject({
      actor: 'a.ricci', kind: 'audit_access', action: 'audit.export',
      args: { role: 'auditor', format: 'csv', filter: { run: runId } },
      result: { entries: rows.length, bytes: csv.bytes.length, sha256: sha256(csv.bytes) },
    });
    expect(e.result['through']).toBeLessThan(e.seq);
  });

  it('a JSONL bundle and a PDF report are recorded the same way; the next export holds the record of the one before', async () => {
    const bundle = await raw(`${A}/audit/export?format=jsonl&kind=audit_access`, 'm.rossi');
    expect(bundle.status).toBe(200);
    const header = JSON.parse(bundle.text.split('\n')[0]!) as { selected: [number, number][] };
    const inFilter = bundle.text.trimEnd().split('\n').slice(1).map((l) => JSON.parse(l) as { type: string; in_filter?: boolean; entry?: { action: string } }).filter((l) => l.type === 'entry' && l.in_filter);
    // the CSV export of the test before is in it, this one is not
    expect(inFilter.map((l) => l.entry!.action)).toEqual(['audit.export']);
    const e = (await accesses()).at(-1)!;
    expect(e).toMatchObject({ actor: 'm.rossi', action: 'audit.export', args: { role: 'qa_reviewer', format: 'jsonl', filter: { kind: 'audit_access' } }, result: { entries: 1, sha256: sha256(bundle.bytes) } });
    expect(header.selected.reduce((n, [a, b]) => n + b - a + 1, 0)).toBe(1);

    const pdf = await raw(`${A}/audit/export?format=pdf&run=${runId}`, 'a.ricci');
    expect([pdf.status, pdf.type]).toEqual([200, 'application/pdf']);
    expect((await accesses()).at(-1)).toMatchObject({ actor: 'a.ricci', action: 'audit.export', args: { format: 'pdf', filter: { run: runId } }, result: { sha256: sha256(pdf.bytes), entries: expect.any(Number) } });
  });

  it('a verify is recorded with what it showed; reading the trail is not recorded; a refused export records nothing', async () => {
    const before = await accesses();
    const v = await call(node.url, 'GET', `${A}/audit/verify`, { token: tok('a.ricci') });
    expect(v.body.ok).toBe(true);
    const after = await accesses();
    expect(after.length).toBe(before.length + 1);
    expect(after.at(-1)).toMatchObject({ actor: 'a.ricci', action: 'audit.verify', args: { role: 'auditor' }, result: { ok: true, count: v.body.count, head: v.body.head.seq, damage: null } });
    expect(after.at(-1)!.seq).toBe(v.body.head.seq + 1);
    // plain reads (the console's search, this test's own listing) add nothing
    for (let i = 0; i < 5; i++) await call(node.url, 'GET', `${A}/audit?limit=10`, { token: tok('a.ricci') });
    expect(await accesses()).toEqual(after);
    // a role the route does not admit, and a bad filter, export nothing and record nothing
    expect((await raw(`${A}/audit/export?format=csv`, 'p.bianchi')).status).toBe(403);
    expect((await raw(`${A}/audit/export?format=csv&from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z`, 'a.ricci')).status).toBe(400);
    expect(await accesses()).toEqual(after);
  });
});
