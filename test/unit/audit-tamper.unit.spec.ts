/**
 * The administrator with the database file: random chains, then exactly one
 * tamper of each kind, made with the triggers dropped. `audit verify` must
 * always notice, name the kind and the first bad seq.
 */
import { generateKeyPairSync } from 'node:crypto';
import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointLogFile } from '../../src/audit/checkpoints.js';
import { parsePublicKey } from '../../src/audit/keys.js';
import { verifyStore, type VerifyReport } from '../../src/audit/verify.js';
import { LkError } from '../../src/errors.js';
import { DB_FILE, openStore } from '../../src/store/store.js';
import { codeOf, editEntry, entry, hashedOf, newStore, RECORD_PATH, recordOf, rewriteSuffix, sha256, tamper, tempDir } from './audit-helpers.js';
import type { Json } from '../../src/audit/entry.js';

const T = 'acme-pharma';
let root: { dir: string; cleanup: () => void };
let runNo = 0;
beforeAll(() => {
  root = tempDir('lk-tamper-');
});
afterAll(() => root.cleanup());

interface Chain {
  dir: string;
  n: number;
  checkpoints: number[];
}

/** A fresh store with `n` entries of T (and a few of another tenant), checkpoint every `every`, closed cleanly. */
function build(n: number, every: number, batch: number): Chain {
  const dir = join(root.dir, `r${runNo++}`);
  const { store } = newStore(dir, { audit: { checkpointEvery: every } });
  let i = 1;
  while (i <= n) {
    const k = Math.min(batch, n - i + 1);
    const items = Array.from({ length: k }, (_, j) => entry(i + j, T, i + j === 2 ? { signature: { user: 'qa.jroe', name: 'Jane Roe', meaning: 'approved', time: '2026-01-01T06:00:00.000Z' } } : {}));
    if (k === 1) store.audit.append(items[0]!);
    else store.audit.appendBatch(items);
    if (i % 4 === 1) store.audit.append(entry(i, 'borealis-bio'));
    i += k;
  }
  store.close();
  const ro = openStore({ dataDir: dir, readonly: true });
  const checkpoints = ro.db.prepare('SELECT seq FROM audit_checkpoint WHERE tenant = ? ORDER BY seq').pluck().all(T) as number[];
  ro.close();
  return { dir, n, checkpoints };
}

function verify(dir: string): VerifyReport {
  const s = openStore({ dataDir: dir, readonly: true });
  try {
    return verifyStore(s);
  } finally {
    s.close();
  }
}

function expectDamage(dir: string, kind: string, seq: number): void {
  const r = verify(dir);
  expect(r.ok).toBe(false);
  const c = r.chains.find((x) => x.tenant === T)!;
  expect({ kind: c.damage?.kind, seq: c.damage?.seq }).toEqual({ kind, seq });
  expect(r.chains.find((x) => x.tenant === 'borealis-bio')?.ok).toBe(true);
}

const chainArb = fc.record({ n: fc.integer({ min: 3, max: 30 }), every: fc.integer({ min: 2, max: 9 }), batch: fc.integer({ min: 1, max: 7 }) });
const RUNS = 25;

/** Change one character of a text so it stays text: a hex digit for hashes, printable ASCII otherwise. */
function flipChar(s: string, pos: number, hex: boolean): string {
  const p = pos % s.length;
  const alphabet = hex ? '0123456789abcdef' : 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:,{}"._- ';
  const c = s[p]!;
  const repl = alphabet[(alphabet.indexOf(c) + 1 + (pos % (alphabet.length - 1))) % alphabet.length] ?? 'x';
  return s.slice(0, p) + (repl === c ? (c === 'a' ? 'b' : 'a') : repl) + s.slice(p + 1);
}

describe('[R12] [P11.10(a)] [P11.10(e)] audit verify finds every tamper (property)', () => {
  it('an intact chain verifies, with count, head and every checkpoint matched', () => {
    fc.assert(
      fc.property(chainArb, ({ n, every, batch }) => {
        const c = build(n, every, batch);
        const r = verify(c.dir);
        expect(r.ok).toBe(true);
        const chain = r.chains.find((x) => x.tenant === T)!;
        expect(chain.count).toBe(n);
        expect(chain.checkpoints).toBe(c.checkpoints.length);
        expect(chain.unanchored).toBe(0);
      }),
      { numRuns: 10 },
    );
  });

  it('a byte changed in any column of any row → edited at that seq', () => {
    // the stored columns (chain, seq, hash) directly; every other column through the record it is generated from
    fc.assert(
      fc.property(chainArb, fc.nat(), fc.nat(), fc.nat(), ({ n, every, batch }, rowPick, colPick, pos) => {
        const c = build(n, every, batch);
        const s = 1 + (rowPick % n);
        tamper(c.dir, (db) => {
          const row = db.prepare(`SELECT tenant, seq, hash, ${Object.keys(RECORD_PATH).join(', ')} FROM audit_entry WHERE tenant = ? AND seq = ?`).get(T, s) as Record<string, unknown>;
          const cols = Object.keys(row).filter((k) => row[k] !== null);
          const col = cols[colPick % cols.length]!;
          const v: unknown = row[col];
          if (col === 'seq') db.prepare('UPDATE audit_entry SET seq = ? WHERE tenant = ? AND seq = ?').run(n + 100 + (pos % 50), T, s);
          else if (col === 'tenant' || col === 'hash') db.prepare(`UPDATE audit_entry SET ${col} = ? WHERE tenant = ? AND seq = ?`).run(flipChar(String(v), pos, col === 'hash'), T, s);
          else if (typeof v === 'number') editEntry(db, T, s, col, v + 1 + (pos % 5));
          else if (['args', 'result', 'old_value', 'new_value', 'signature'].includes(col)) {
            // a JSON member: a character of its text changed where the text stays JSON, else the text itself as a string
            const text = flipChar(String(v), pos, false);
            let value: Json = text;
            try {
              value = JSON.parse(text) as Json;
            } catch {
              // not JSON any more: stored as the string it now is
            }
            if (JSON.stringify(value) === v) value = `${text}!`;
            editEntry(db, T, s, col, value);
          } else editEntry(db, T, s, col, flipChar(String(v), pos, col === 'prev_hash'));
        });
        expectDamage(c.dir, 'edited', s);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('a byte of a record changed where it stays JSON → edited at that seq', () => {
    fc.assert(
      fc.property(chainArb, fc.nat(), fc.nat(), ({ n, every, batch }, rowPick, pos) => {
        const c = build(n, every, batch);
        const s = 1 + (rowPick % n);
        let changed = false;
        tamper(c.dir, (db) => {
          const body = db.prepare('SELECT body FROM audit_entry WHERE tenant = ? AND seq = ?').pluck().get(T, s) as string;
          for (let k = 0; k < body.length && !changed; k++) {
            const edited = flipChar(body, pos + k, false);
            try {
              JSON.parse(edited);
            } catch {
              continue;
            }
            db.prepare('UPDATE audit_entry SET body = ? WHERE tenant = ? AND seq = ?').run(edited, T, s);
            changed = true;
          }
        });
        expect(changed).toBe(true);
        expectDamage(c.dir, 'edited', s);
      }),
      { numRuns: RUNS },
    );
  });

  it('a record respelled (same values, not canonical) with the hash recomputed over the new bytes → edited at that seq', () => {
    // the hash is defined over the canonical form, and the auditors' verifier re-canonicalises what it reads
    const respell = [(v: string): string => (v.includes('.') ? `${v}0` : `${v}.0`), (v: string): string => `${v} `, (v: string): string => Number(v).toExponential(), (v: string): string => ` ${v}`];
    fc.assert(
      fc.property(chainArb, fc.nat(), fc.nat(), ({ n, every, batch }, rowPick, how) => {
        const c = build(n, every, batch);
        const s = 1 + (rowPick % n);
        tamper(c.dir, (db) => {
          const [body, v] = db.prepare('SELECT body, new_value FROM audit_entry WHERE tenant = ? AND seq = ?').raw().get(T, s) as [string, string];
          const spelt = respell[how % respell.length]!(v);
          expect(JSON.parse(spelt)).toBe(JSON.parse(v));
          const edited = body.replace(`"new":${v},`, `"new":${spelt},`);
          expect(JSON.parse(edited)).toEqual(JSON.parse(body));
          expect(edited).not.toBe(body);
          db.prepare('UPDATE audit_entry SET body = ?, hash = ? WHERE tenant = ? AND seq = ?').run(edited, sha256(edited), T, s);
        });
        expectDamage(c.dir, 'edited', s);
      }),
      { numRuns: RUNS },
    );
  });

  it('a row deleted → deleted at that seq', () => {
    fc.assert(
      fc.property(chainArb, fc.nat(), ({ n, every, batch }, pick) => {
        const c = build(n, every, batch);
        const s = 1 + (pick % (n - 1));
        tamper(c.dir, (db) => db.prepare('DELETE FROM audit_entry WHERE tenant = ? AND seq = ?').run(T, s));
        expectDamage(c.dir, 'deleted', s);
      }),
      { numRuns: RUNS },
    );
  });

  it('a row inserted (later rows renumbered), with a garbage or a correctly recomputed hash → inserted at that seq', () => {
    fc.assert(
      fc.property(chainArb, fc.nat(), fc.boolean(), ({ n, every, batch }, pick, recompute) => {
        const c = build(n, every, batch);
        const s = 1 + (pick % n);
        tamper(c.dir, (db) => {
          const up = db.prepare('UPDATE audit_entry SET seq = seq + 1 WHERE tenant = ? AND seq = ?');
          for (let q = n; q >= s; q--) up.run(T, q);
          const prev = (db.prepare('SELECT hash FROM audit_entry WHERE tenant = ? AND seq = ?').pluck().get(T, s - 1) as string | undefined) ?? '0'.repeat(64);
          const forged: Record<string, unknown> = { seq: s, ts: '2026-01-01T06:00:00.000Z', actor: 'op-9', kind: 'tool_call', action: 'press.write_setpoint', run: null, batch: null, agent: null, tool: null, setpoint: null, reviewer: null, args: null, result: null, reason: 'looks legitimate', old_value: null, new_value: null, intent: null, signature: null, prev_hash: prev };
          const rec = recordOf(hashedOf(T, forged));
          db.prepare('INSERT INTO audit_entry (tenant, seq, body, hash) VALUES (?, ?, ?, ?)').run(T, s, rec.body, recompute ? rec.hash : 'f'.repeat(64));
        });
        expectDamage(c.dir, 'inserted', s);
      }),
      { numRuns: RUNS },
    );
  });

  it('two rows swapped → reordered at the lower seq', () => {
    fc.assert(
      fc.property(chainArb, fc.nat(), fc.nat(), ({ n, every, batch }, a, b) => {
        const c = build(n, every, batch);
        const i = 1 + (a % (n - 1));
        const j = i + 1 + (b % (n - i));
        tamper(c.dir, (db) => {
          const mv = db.prepare('UPDATE audit_entry SET seq = ? WHERE tenant = ? AND seq = ?');
          mv.run(-1, T, i);
          mv.run(i, T, j);
          mv.run(j, T, -1);
        });
        expectDamage(c.dir, 'reordered', i);
      }),
      { numRuns: RUNS },
    );
  });

  it('the tail truncated (also with the database checkpoints removed) → truncated at the first missing seq', () => {
    fc.assert(
      fc.property(chainArb, fc.nat(), fc.boolean(), ({ n, every, batch }, pick, alsoCheckpoints) => {
        const c = build(n, every, batch);
        const s = 1 + (pick % n);
        tamper(c.dir, (db) => {
          db.prepare('DELETE FROM audit_entry WHERE tenant = ? AND seq >= ?').run(T, s);
          if (alsoCheckpoints) db.prepare('DELETE FROM audit_checkpoint WHERE tenant = ? AND seq >= ?').run(T, s);
        });
        expectDamage(c.dir, 'truncated', s);
      }),
      { numRuns: RUNS },
    );
  });

  it('a suffix rewritten with recomputed hashes → rewritten, from the first seq after the last matching checkpoint', () => {
    fc.assert(
      fc.property(chainArb, fc.nat(), fc.boolean(), ({ n, every, batch }, pick, alsoCheckpoints) => {
        const c = build(n, every, batch);
        const s = 1 + (pick % n);
        tamper(c.dir, (db) => {
          rewriteSuffix(db, T, s, 'someone.else');
          if (alsoCheckpoints) db.prepare('DELETE FROM audit_checkpoint WHERE tenant = ? AND seq >= ?').run(T, s);
        });
        const c0 = Math.max(0, ...c.checkpoints.filter((x) => x < s));
        expectDamage(c.dir, 'rewritten', c0 + 1);
        expect(c0 + 1).toBeLessThanOrEqual(s);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('checkpoints, key and file faults', () => {
  it('a checkpoint signature changed → signature_invalid at its seq', () => {
    const c = build(12, 4, 1);
    expect(c.checkpoints).toEqual([4, 8, 12]);
    tamper(c.dir, (db) => db.prepare("UPDATE audit_checkpoint SET head_hash = ? WHERE tenant = ? AND seq = 8").run('0'.repeat(64), T));
    // The log still holds the genuine checkpoint at 8, so only the forged database row is bad.
    expectDamage(c.dir, 'signature_invalid', 8);
  });

  it('a checkpoint in the database but not in the log → checkpoint_missing; a garbage log line → checkpoint_log_corrupt', () => {
    const c = build(12, 4, 1);
    const f = checkpointLogFile(c.dir);
    const lines = readFileSync(f, 'utf8').split('\n').filter((l) => l !== '' && !(l.includes('"seq":4,') && l.includes(`"tenant":"${T}"`)));
    writeFileSync(f, `${lines.join('\n')}\n`);
    expectDamage(c.dir, 'checkpoint_missing', 4);
    appendFileSync(f, 'this is not a checkpoint\n');
    const r = verify(c.dir);
    expect(r.problems.map((p) => p.kind)).toEqual(['checkpoint_log_corrupt']);
  });

  it('a missing checkpoint log → LK_AUDIT_CHECKPOINT_MISSING; a wrong key → LK_AUDIT_KEY; never a pass', () => {
    const c = build(6, 3, 2);
    const other = parsePublicKey(generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString());
    const s = openStore({ dataDir: c.dir, readonly: true });
    expect(codeOf(() => verifyStore(s, { publicKey: other }))).toBe('LK_AUDIT_KEY');
    s.close();
    rmSync(join(c.dir, 'keys'), { recursive: true });
    const s2 = openStore({ dataDir: c.dir, readonly: true });
    expect(codeOf(() => verifyStore(s2))).toBe('LK_AUDIT_KEY');
    rmSync(checkpointLogFile(c.dir));
    expect(codeOf(() => verifyStore(s2))).toBe('LK_AUDIT_CHECKPOINT_MISSING');
    s2.close();
  });

  it('a column\'s generation rewritten in the schema (writable_schema) → schema_altered, though every record still hashes right', () => {
    const c = build(6, 3, 2);
    tamper(c.dir, (db) => {
      db.unsafeMode(true); // better-sqlite3 opens in SQLite's defensive mode, which refuses writable_schema
      db.pragma('writable_schema = ON');
      const n = db.prepare("UPDATE sqlite_schema SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = 'audit_entry'")
        .run("(body ->> '$.subject.run')", "(CASE WHEN seq = 3 THEN 'FORGED' ELSE body ->> '$.subject.run' END)").changes;
      expect(n).toBe(1);
    });
    const s = openStore({ dataDir: c.dir, readonly: true });
    try {
      // what the application would read …
      expect(s.db.prepare('SELECT run FROM audit_entry WHERE tenant = ? AND seq = 3').pluck().get(T)).toBe('FORGED');
      const r = verifyStore(s);
      // … while every chain still verifies: only the schema check tells
      expect(r.chains.every((x) => x.ok)).toBe(true);
      expect(r.ok).toBe(false);
      // (the tamper helper dropped the triggers too, which is reported on its own)
      expect(r.problems).toContainEqual(expect.objectContaining({ kind: 'schema_altered', seq: null, detail: expect.stringContaining('audit_entry') }));
    } finally {
      s.close();
    }
    const intact = build(4, 3, 2);
    expect(verify(intact.dir).problems).toEqual([]);
  });

  it('[A11.7] damaged database pages → LK_STORE_CORRUPT or a damage report, never an intact verdict', () => {
    for (let k = 0; k < 6; k++) {
      const dir = join(root.dir, `pages${k}`);
      const { store } = newStore(dir, { audit: { checkpointEvery: 10 } });
      for (let i = 1; i <= 30; i++) store.audit.append(entry(i, T, { reason: `marker<${i}> capping risk above threshold` }));
      store.close();
      const f = join(dir, DB_FILE);
      const buf = readFileSync(f);
      // Only a marker found exactly once is surely the live row: page splits leave stale copies in free space,
      // where a scribble changes nothing.
      const live = Array.from({ length: 30 }, (_, i) => `marker<${i + 1}>`).filter((m) => buf.indexOf(m) >= 0 && buf.indexOf(m) === buf.lastIndexOf(m));
      expect(live.length).toBeGreaterThan(3);
      const at = buf.indexOf(live[(k * 5) % live.length]!);
      buf.fill(0x41 + k, Math.max(0, at - 40 * (k % 3)), at + 10 + 60 * k);
      writeFileSync(f, buf);
      let verdict: string;
      try {
        const s = openStore({ dataDir: dir, readonly: true });
        try {
          verdict = verifyStore(s).ok ? 'intact' : 'damaged';
        } finally {
          s.close();
        }
      } catch (err) {
        verdict = LkError.is(err) ? err.code : `crash: ${String(err)}`;
      }
      expect(['damaged', 'LK_STORE_CORRUPT']).toContain(verdict);
    }
  });
});
