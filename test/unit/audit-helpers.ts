/**
 * Shared pieces of the audit tests: temporary stores on real SQLite files,
 * entry generators, and an "administrator with the database file" who drops
 * the triggers and edits rows directly (the attacker the trail must survive).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { ManualClock } from '../../src/clock.js';
import { LkError, type ErrorCode } from '../../src/errors.js';
import { openStore, DB_FILE, type Store, type StoreOptions } from '../../src/store/store.js';
import { createHash } from 'node:crypto';
import { rowBody } from '../../src/audit/body.js';
import { canonicalJson, COL, ENTRY_COLUMNS, entryToRow, GENESIS_HASH, parseEntryInput, toHashed, type AuditEntry, type AuditEntryInput, type HashedEntry, type Json } from '../../src/audit/entry.js';

export function tempDir(prefix = 'lk-audit-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function newStore(dir: string, opts: Partial<StoreOptions> = {}): { store: Store; clock: ManualClock } {
  const clock = (opts.clock as ManualClock | undefined) ?? new ManualClock(Date.UTC(2026, 0, 1, 6));
  return { store: openStore({ dataDir: dir, clock, ...opts }), clock };
}

/** The code of the LkError `fn` throws; fails the test when it throws nothing or something else. */
export function codeOf(fn: () => unknown): ErrorCode {
  try {
    fn();
  } catch (err) {
    if (LkError.is(err)) return err.code;
    throw err;
  }
  throw new Error('expected an LkError');
}

export function entry(i: number, tenant = 'acme-pharma', extra: Partial<AuditEntryInput> = {}): AuditEntryInput {
  return {
    tenant, actor: 'agent.compress_fill', kind: 'tool_call', action: 'press.write_setpoint',
    subject: { run: 'run_a1', batch: `B-${1 + (i % 3)}`, setpoint: 'press.MainForce', tool: 'press.write_setpoint' },
    args: { value: 10 + (i % 7) / 4, unit: 'kN' }, reason: 'capping risk above threshold', old: 10, new: 10 + (i % 7) / 4, ...extra,
  };
}

const str = fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' });
const json: fc.Arbitrary<Json> = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>;

/** Random valid entry inputs (strings include non-ASCII, JSON payloads of every shape). */
export const entryArb = (tenant = 'acme-pharma'): fc.Arbitrary<AuditEntryInput> =>
  fc.record(
    {
      tenant: fc.constant(tenant),
      actor: fc.constantFrom('system', 'agent.coat_dry', 'qa.jroe', 'op-7'),
      kind: fc.constantFrom('tool_call', 'tool_result', 'policy_decision', 'approval', 'config_change'),
      action: str,
      subject: fc.record({ run: str, batch: str, agent: str, tool: str, setpoint: str, reviewer: str }, { requiredKeys: [] }),
      args: json,
      result: json,
      reason: str,
      old: json,
      new: json,
      signature: fc.record({ user: str, name: str, meaning: str, time: fc.constant('2026-01-01T00:00:00.000Z'), value: str }, { requiredKeys: ['user', 'name', 'meaning', 'time'] }),
    },
    { requiredKeys: ['tenant', 'actor', 'kind', 'action'] },
  );

/** The attacker: a raw connection with the append-only triggers removed. */
export function rawDb(dir: string): Database.Database {
  const db = new Database(join(dir, DB_FILE));
  for (const t of ['audit_entry', 'audit_chain', 'audit_checkpoint']) {
    db.exec(`DROP TRIGGER IF EXISTS ${t}_no_update; DROP TRIGGER IF EXISTS ${t}_no_delete;`);
  }
  return db;
}

/** Change the database behind the trail's back (what an attacker with file access does), then close it. */
export function tamper(dir: string, fn: (db: Database.Database) => void): void {
  const db = rawDb(dir);
  try {
    fn(db);
  } finally {
    db.close();
  }
}

export const COLS = ENTRY_COLUMNS as readonly string[];

/** Where a column of `audit_entry` lives in an entry's stored record (migration 14: the columns are generated from it). */
export const RECORD_PATH: Readonly<Record<string, string>> = {
  ts: '$.ts', actor: '$.actor', kind: '$.kind', action: '$.action', run: '$.subject.run', batch: '$.subject.batch', agent: '$.subject.agent',
  tool: '$.subject.tool', setpoint: '$.subject.setpoint', reviewer: '$.subject.reviewer', args: '$.args', result: '$.result', reason: '$.reason',
  old_value: '$.old', new_value: '$.new', intent: '$.intent', signature: '$.signature', prev_hash: '$.prev_hash',
};

/**
 * Change what entry `seq` says in `column` to `value` (a JSON value), as an editor of the database file does: in
 * the stored record, leaving its hash as it was. Needs the triggers dropped (`tamper`, `rawDb`).
 */
export function editEntry(db: Database.Database, tenant: string, seq: number, column: string, value: Json): void {
  const path = RECORD_PATH[column];
  if (!path) throw new Error(`${column} is not a column generated from the record`);
  const n = db.prepare('UPDATE audit_entry SET body = json_set(body, ?, json(?)) WHERE tenant = ? AND seq = ?').run(path, JSON.stringify(value), tenant, seq).changes;
  if (n !== 1) throw new Error(`no entry ${tenant}/${seq}`);
}

/**
 * Append an entry as linekeeper before schema version 14 did, to a database of that schema: one column per field,
 * the hash over rowBody's bytes (the old append's), the chain continued from its head. For migration tests.
 */
export function appendV13(db: Database.Database, input: AuditEntryInput, ts: string): AuditEntry {
  const p = parseEntryInput(input);
  const head = db.prepare('SELECT seq, hash FROM audit_entry WHERE tenant = ? ORDER BY seq DESC LIMIT 1').raw().get(p.tenant) as [number, string] | undefined;
  const e = toHashed(p, (head?.[0] ?? 0) + 1, ts, head?.[1] ?? GENESIS_HASH);
  const row = entryToRow(e);
  const h = sha256(rowBody(p.tenant, row)!);
  row[COL.hash] = h;
  if (!head) db.prepare('INSERT OR IGNORE INTO audit_chain (tenant, created_at) VALUES (?, ?)').run(p.tenant, ts);
  db.prepare(`INSERT INTO audit_entry (tenant, ${ENTRY_COLUMNS.join(', ')}) VALUES (${['?', ...ENTRY_COLUMNS.map(() => '?')].join(', ')})`).run(p.tenant, ...row);
  return { ...e, hash: h };
}

/** SHA-256 hex of a text. */
export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The record (canonical JSON, the test's own reading of docs/audit.md) and hash of a hashed object. */
export function recordOf(e: HashedEntry): { body: string; hash: string } {
  const body = canonicalJson(e);
  return { body, hash: sha256(body) };
}

/** Rewrite rows from..head of a chain with new content at `from` and recomputed hashes (the strongest edit). */
export function rewriteSuffix(db: Database.Database, tenant: string, from: number, newActor: string): void {
  const rows = db.prepare(`SELECT ${COLS.join(', ')} FROM audit_entry WHERE tenant = ? AND seq >= ? ORDER BY seq`).all(tenant, from) as Record<string, unknown>[];
  let prev = (db.prepare('SELECT hash FROM audit_entry WHERE tenant = ? AND seq = ?').pluck().get(tenant, from - 1) as string | undefined) ?? '0'.repeat(64);
  const upd = db.prepare('UPDATE audit_entry SET body = ?, hash = ? WHERE tenant = ? AND seq = ?');
  for (const r of rows) {
    const actor = r.seq === from ? newActor : (r.actor as string);
    const rec = recordOf(hashedOf(tenant, { ...r, actor, prev_hash: prev }));
    upd.run(rec.body, rec.hash, tenant, r.seq);
    prev = rec.hash;
  }
}

/** The hashed object of a raw row (the test's own reading of docs/audit.md). */
export function hashedOf(tenant: string, r: Record<string, unknown>): HashedEntry {
  const subject: Record<string, string> = {};
  for (const k of ['agent', 'batch', 'reviewer', 'run', 'setpoint', 'tool']) if (r[k] !== null) subject[k] = r[k] as string;
  const e: Record<string, unknown> = { v: 1, tenant, seq: r.seq, ts: r.ts, actor: r.actor, kind: r.kind, action: r.action, subject, prev_hash: r.prev_hash };
  const j = (k: string, col: string): void => {
    if (r[col] !== null) e[k] = JSON.parse(r[col] as string);
  };
  j('args', 'args');
  j('result', 'result');
  j('old', 'old_value');
  j('new', 'new_value');
  j('signature', 'signature');
  if (r.reason !== null) e.reason = r.reason;
  if (r.intent !== null) e.intent = r.intent;
  return e as unknown as HashedEntry;
}
