import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { APPLICATION_ID, DB_FILE, openStore } from '../../src/store/store.js';
import { MIGRATIONS, type Migration } from '../../src/store/migrations.js';
import { codeOf, entry, newStore, sha256, tempDir } from './audit-helpers.js';
import { rowBody } from '../../src/audit/body.js';
import { COL, ENTRY_COLUMNS, entryToRow, GENESIS_HASH, parseEntryInput, toHashed, type AuditEntry } from '../../src/audit/entry.js';
import { iterateAudit } from '../../src/audit/query.js';
import { verifyStore } from '../../src/audit/verify.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});
function dir(): string {
  const t = tempDir('lk-store-');
  cleanups.push(t.cleanup);
  return t.dir;
}

describe('openStore', () => {
  it('creates a WAL database at synchronous=FULL, stamped as linekeeper, with the migrations recorded once', () => {
    const d = dir();
    const { store } = newStore(d);
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.db.pragma('synchronous', { simple: true })).toBe(2); // FULL
    expect(store.db.pragma('application_id', { simple: true })).toBe(APPLICATION_ID);
    expect(store.schemaVersion).toBe(MIGRATIONS.length);
    store.close();
    const again = openStore({ dataDir: d });
    const rows = again.db.prepare('SELECT version FROM schema_migration ORDER BY version').pluck().all();
    expect(rows).toEqual(MIGRATIONS.map((m) => m.version));
    again.close();
  });

  it('refuses a file that is not a database, and a SQLite database of another application', () => {
    const a = dir();
    writeFileSync(join(a, DB_FILE), Buffer.alloc(8192, 0x5a));
    expect(codeOf(() => openStore({ dataDir: a }))).toBe('LK_STORE_CORRUPT');
    const b = dir();
    const foreign = new Database(join(b, DB_FILE));
    foreign.exec('CREATE TABLE recipes (id INTEGER PRIMARY KEY, body TEXT)');
    foreign.close();
    expect(codeOf(() => openStore({ dataDir: b }))).toBe('LK_STORE_CORRUPT');
    expect(codeOf(() => openStore({ dataDir: b, readonly: true }))).toBe('LK_STORE_CORRUPT');
  });

  it('[A11.7] refuses a database whose header was damaged', () => {
    const d = dir();
    const { store } = newStore(d);
    store.audit.append(entry(1));
    store.close();
    const f = join(d, DB_FILE);
    const buf = readFileSync(f);
    buf.write('garbage garbage!', 0, 'latin1'); // the 16-byte "SQLite format 3\0" magic
    writeFileSync(f, buf);
    expect(codeOf(() => openStore({ dataDir: d }))).toBe('LK_STORE_CORRUPT');
  });

  it('read-only: no database → LK_NOT_FOUND; never creates one; refuses writes', () => {
    const d = dir();
    expect(codeOf(() => openStore({ dataDir: d, readonly: true }))).toBe('LK_NOT_FOUND');
    newStore(d).store.close();
    const ro = openStore({ dataDir: d, readonly: true });
    expect(codeOf(() => ro.audit.append(entry(1)))).toBe('LK_INTERNAL');
    ro.close();
  });

  it('a newer database than this software is refused; a failing migration leaves the previous version', () => {
    const d = dir();
    const bad: Migration[] = [...MIGRATIONS, { version: MIGRATIONS.length + 1, name: 'broken', up: 'CREATE TABLE t (a); SELECT * FROM no_such_table;' }];
    expect(codeOf(() => openStore({ dataDir: d, migrations: bad }))).toBe('LK_STORE_MIGRATION');
    const s = openStore({ dataDir: d });
    expect(s.schemaVersion).toBe(MIGRATIONS.length);
    expect(s.db.prepare("SELECT name FROM sqlite_master WHERE name = 't'").get()).toBeUndefined();
    s.close();
    const later: Migration[] = [...MIGRATIONS, { version: MIGRATIONS.length + 1, name: 'later', up: 'CREATE TABLE later_table (a)' }];
    openStore({ dataDir: d, migrations: later }).close();
    expect(codeOf(() => openStore({ dataDir: d }))).toBe('LK_STORE_MIGRATION');
    expect(codeOf(() => openStore({ dataDir: d, migrations: [{ version: 2, name: 'gap', up: '' }] }))).toBe('LK_STORE_MIGRATION');
  });

  it('[R12] migration 14 turns every entry of a version-13 trail into its record: the same entries, the same hashes, the same damage', () => {
    const d = dir();
    const old = openStore({ dataDir: d, migrations: MIGRATIONS.filter((m) => m.version <= 13) });
    // entries as version 13 appended them: one column per field, the hash over rowBody's bytes
    const ins = old.db.prepare(`INSERT INTO audit_entry (tenant, ${ENTRY_COLUMNS.join(', ')}) VALUES (${['?', ...ENTRY_COLUMNS.map(() => '?')].join(', ')})`);
    const written: AuditEntry[] = [];
    for (const tenant of ['acme-pharma', 'borealis-bio']) {
      let prev = GENESIS_HASH;
      for (let i = 1; i <= 25; i++) {
        const extra = i === 3 ? { signature: { user: 'm.rossi', name: 'Maria Rossi', meaning: 'approved — release', time: '2026-01-01T06:00:00.000Z' } } : i === 4 ? { reason: 'quote " backslash \\ newline \n °C' } : {};
        const e = toHashed(parseEntryInput(entry(i, tenant, extra)), i, new Date(Date.UTC(2026, 0, 1, 6, 0, i)).toISOString(), prev, i === 6 ? 5 : undefined);
        const row = entryToRow(e);
        const h = sha256(rowBody(tenant, row)!);
        row[COL.hash] = h;
        ins.run(tenant, ...row);
        written.push({ ...e, hash: h });
        prev = h;
      }
    }
    // one edit made before the upgrade (the hash left as it was) must still be found after it
    old.db.exec("DROP TRIGGER audit_entry_no_update; UPDATE audit_entry SET actor = 'mallory' WHERE tenant = 'borealis-bio' AND seq = 7");
    // a damaged row SQLite's JSON functions cannot read once it is inside a record (nested 1,000 deep) is kept, not fatal
    const deep = `${'['.repeat(1000)}${']'.repeat(1000)}`;
    ins.run('cedar-labs', 1, '2026-01-01T06:00:00.000Z', 'system', 'system', 'x', null, null, null, null, null, null, deep, null, null, null, null, null, null, GENESIS_HASH, 'f'.repeat(64));
    old.close();
    // a read-only open (audit verify before the first start of the new version) does not upgrade, and says so
    expect(codeOf(() => openStore({ dataDir: d, readonly: true }))).toBe('LK_STORE_MIGRATION');
    const s = openStore({ dataDir: d });
    expect(s.schemaVersion).toBe(MIGRATIONS.length);
    // every column reads back as before, now generated from the record
    expect([...iterateAudit(s.db, 'acme-pharma')]).toEqual(written.filter((e) => e.tenant === 'acme-pharma'));
    const r = verifyStore(s);
    expect(r.chains.find((c) => c.tenant === 'acme-pharma')).toMatchObject({ ok: true, count: 25 });
    expect(r.chains.find((c) => c.tenant === 'borealis-bio')?.damage).toMatchObject({ kind: 'edited', seq: 7 });
    expect(r.chains.find((c) => c.tenant === 'cedar-labs')?.damage).toMatchObject({ kind: 'edited', seq: 1 });
    expect(JSON.parse(s.db.prepare("SELECT body FROM audit_entry WHERE tenant = 'cedar-labs'").pluck().get() as string)).toHaveProperty('unreadable_v13_row');
    // the triggers are back on the new table, and the trail goes on from the migrated head
    expect(() => s.db.prepare("UPDATE audit_entry SET body = json_set(body, '$.actor', 'x') WHERE seq = 1").run()).toThrow(/LK_AUDIT_IMMUTABLE/);
    expect(s.audit.append(entry(26)).prev_hash).toBe(written.find((e) => e.tenant === 'acme-pharma' && e.seq === 25)!.hash);
    expect(verifyStore(s).chains.find((c) => c.tenant === 'acme-pharma')).toMatchObject({ ok: true, count: 26 });
    s.close();
  });

  it('[R12] the trail\'s lookups by run, batch, agent, tool, reviewer, intent, time and open intent use their indexes, never a walk of the chain', () => {
    // an index on a generated column is not used by SQLite's planner in a WITHOUT ROWID table: a lookup that closes an
    // intent read the whole chain (every write slower as the trail grew); the plans are held here
    const { store } = newStore(dir());
    const plan = (sql: string): string => (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array((sql.match(/\?/g) ?? []).length).fill(1)) as { detail: string }[]).map((r) => r.detail).join(' | ');
    for (const col of ['run', 'batch', 'agent', 'tool', 'reviewer']) {
      expect(plan(`SELECT seq FROM audit_entry WHERE tenant = ? AND ${col} = ? AND seq > ? ORDER BY seq LIMIT 50`)).toMatch(new RegExp(`USING (COVERING )?INDEX audit_entry_${col} \\(tenant=\\? AND ${col}=\\? AND seq>\\?\\)`));
    }
    expect(plan('SELECT seq FROM audit_entry WHERE tenant = ? AND intent = ? LIMIT 1')).toMatch(/INDEX audit_entry_intent \(tenant=\? AND intent=\?\)/);
    expect(plan('SELECT count(*) FROM audit_entry WHERE tenant = ? AND ts >= ? AND ts < ?')).toMatch(/INDEX audit_entry_ts \(tenant=\? AND ts>\? AND ts<\?\)/);
    const open = plan("SELECT seq FROM audit_entry i WHERE tenant = ? AND kind = 'intent' AND NOT EXISTS (SELECT 1 FROM audit_entry o WHERE o.tenant = i.tenant AND o.intent = +i.seq) ORDER BY seq");
    expect(open).toMatch(/SEARCH i USING (COVERING )?INDEX audit_entry_intents/);
    expect(open).toMatch(/SEARCH o USING (COVERING )?INDEX audit_entry_intent \(tenant=\? AND intent=\?\)/);
    expect(plan('SELECT seq, body, hash FROM audit_entry WHERE tenant = ? AND seq > ? AND seq <= ? ORDER BY seq')).toMatch(/\(tenant=\? AND seq>\? AND seq<\?\)/);
    store.close();
  });

  it('migration 10 keeps the runs, steps and approvals of a version-9 database, admits ABORTED and withdrawn, and keeps the foreign keys', () => {
    const d = dir();
    const v9 = MIGRATIONS.filter((m) => m.version <= 9);
    const old = openStore({ dataDir: d, migrations: v9 });
    old.db.exec(`INSERT INTO run (id, tenant, batch, line, product, tooling, status, goal, request, limits, autonomy, record, record_sha, seed, started_by, created_at, updated_at)
      VALUES ('run_0123456789', 'acme-pharma', 'B-1', 'line-3', 'p', 't', 'HELD', 'g', '{}', '{}', 'L3', '{}', 'x', 1, 'o.operator', 1, 1);
      INSERT INTO run_step (run, seq, name, agent, tool, gate, continuous, status) VALUES ('run_0123456789', '05', 'compress.press', 'a', 't', 0, 0, 'HELD');
      INSERT INTO run_approval (id, run, tenant, kind, status, reviewer, record, record_hash, requested_at) VALUES ('apr_1', 'run_0123456789', 'acme-pharma', 'batch_release', 'pending', 'm.rossi', '{}', 'h', 1);`);
    expect(() => old.db.exec("UPDATE run SET status = 'ABORTED'")).toThrow(/CHECK/);
    old.close();
    const s = openStore({ dataDir: d });
    expect(s.schemaVersion).toBe(MIGRATIONS.length);
    expect(s.db.prepare('SELECT status FROM run').pluck().all()).toEqual(['HELD']);
    expect(s.db.prepare('SELECT status FROM run_step').pluck().all()).toEqual(['HELD']);
    s.db.exec("UPDATE run SET status = 'ABORTED'; UPDATE run_step SET status = 'ABORTED'; UPDATE run_approval SET status = 'withdrawn'");
    expect(() => s.db.exec("UPDATE run SET status = 'DONE'")).toThrow(/CHECK/);
    expect(() => s.db.exec("INSERT INTO run_step (run, seq, name, agent, tool, gate, continuous, status) VALUES ('run_nobody', '01', 'n', 'a', 't', 0, 0, 'PENDING')")).toThrow(/FOREIGN KEY/);
    expect(s.db.pragma('foreign_keys', { simple: true })).toBe(1);
    // the line lock is back: a second active run on the line is refused
    s.db.exec("UPDATE run SET status = 'RUNNING'");
    expect(() => s.db.exec(`INSERT INTO run (id, tenant, batch, line, product, tooling, status, goal, request, limits, autonomy, record, record_sha, seed, started_by, created_at, updated_at)
      VALUES ('run_9999999999', 'acme-pharma', 'B-2', 'line-3', 'p', 't', 'PENDING', 'g', '{}', '{}', 'L3', '{}', 'x', 1, 'o.operator', 2, 2)`)).toThrow(/UNIQUE/);
    s.close();
  });
});

describe('store.tx', () => {
  const stateMigration: Migration = { version: MIGRATIONS.length + 1, name: 'test state', up: 'CREATE TABLE setpoint_state (tag TEXT PRIMARY KEY, value REAL NOT NULL)' };

  it('[R2] [INV-AUDIT-TX] commits a state change and its audit entry together, and rolls both back together', () => {
    const d = dir();
    const { store } = newStore(d, { migrations: [...MIGRATIONS, stateMigration] });
    store.tx((t) => {
      t.db.prepare('INSERT INTO setpoint_state VALUES (?, ?)').run('press.MainForce', 12);
      t.audit.append(entry(1, 'acme-pharma', { old: null, new: 12 }));
    });
    expect(() =>
      store.tx((t) => {
        t.db.prepare('UPDATE setpoint_state SET value = ? WHERE tag = ?').run(14, 'press.MainForce');
        t.audit.append(entry(2, 'acme-pharma', { old: 12, new: 14 }));
        throw new Error('write to the PLC failed before commit');
      }),
    ).toThrow('write to the PLC failed');
    expect(store.db.prepare('SELECT value FROM setpoint_state').pluck().get()).toBe(12);
    expect(store.audit.head('acme-pharma').seq).toBe(1);
    // An invalid audit entry aborts the state change too.
    expect(codeOf(() => store.tx((t) => {
      t.db.prepare('UPDATE setpoint_state SET value = 99').run();
      t.audit.append({ ...entry(3), new: Number.NaN });
    }))).toBe('LK_VALIDATION');
    expect(store.db.prepare('SELECT value FROM setpoint_state').pluck().get()).toBe(12);
    store.close();
  });

  it('runs after-commit hooks once after the outermost commit, drops them on rollback', () => {
    const { store } = newStore(dir());
    const ran: string[] = [];
    store.tx(() => {
      store.afterCommit(() => ran.push('a'), 'k');
      store.tx(() => store.afterCommit(() => ran.push('b'), 'k'));
      expect(ran).toEqual([]);
    });
    expect(ran).toEqual(['b']);
    expect(() => store.tx(() => {
      store.afterCommit(() => ran.push('c'));
      throw new Error('rollback');
    })).toThrow('rollback');
    expect(ran).toEqual(['b']);
    store.close();
  });

  it('[R12] [P11.10(e)] [P11.10(c)] refuses UPDATE and DELETE on audit rows (triggers), even inside a transaction', () => {
    const { store } = newStore(dir());
    store.audit.append(entry(1));
    expect(store.audit.checkpoint('acme-pharma')?.seq).toBe(1);
    expect(codeOf(() => store.tx((t) => t.db.prepare("UPDATE audit_entry SET body = json_set(body, '$.actor', 'someone.else')").run()))).toBe('LK_AUDIT_IMMUTABLE');
    expect(codeOf(() => store.tx((t) => t.db.prepare('DELETE FROM audit_entry').run()))).toBe('LK_AUDIT_IMMUTABLE');
    expect(codeOf(() => store.tx((t) => t.db.prepare('DELETE FROM audit_checkpoint').run()))).toBe('LK_AUDIT_IMMUTABLE');
    expect(store.audit.head('acme-pharma').seq).toBe(1);
    expect('update' in store.audit || 'delete' in store.audit || 'remove' in store.audit).toBe(false);
    store.close();
  });

  it('refuses to run inside a transaction it did not open (the checkpoint hooks would be skipped)', () => {
    const { store } = newStore(dir());
    store.db.exec('BEGIN');
    expect(codeOf(() => store.audit.append(entry(1)))).toBe('LK_INTERNAL');
    store.db.exec('ROLLBACK');
    store.close();
  });
});
