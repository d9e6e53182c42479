/**
 * The fast paths of the row serialisation (body.ts) change no verdict: the string quoting equals
 * JSON.stringify, the JSON-column check equals "canonicalize(JSON.parse(t)) === t", and rowBody returns the
 * same bytes (or the same undefined) as the straightforward serialisation, on intact and on tampered rows.
 * What verify asks of a stored record (canonicalEntry) is held to the definition; and migration 14 gives each
 * version-13 row the bytes rowBody made of it (the old verify's hash input), or no entry where rowBody refused.
 */
import Database from 'better-sqlite3';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { jsonString, rowBody } from '../../src/audit/body.js';
import { intactRecord } from '../../src/audit/record.js';
import { canonicalEntry, isCanonicalJson } from '../../src/audit/canonical-text.js';
import { canonicalJson, COL as C, ENTRY_COLUMNS, ENTRY_FORMAT, parseEntryInput, toHashed, type EntryRow } from '../../src/audit/entry.js';
import { V13_BODY, V13_UNREADABLE } from '../../src/store/migrations.js';
import { entryArb } from './audit-helpers.js';
import { anyCodePoints } from '../helpers/code-points.js';

/** `LK_PROPERTY_SCALE=50 npx vitest run test/unit/audit-body.unit.spec.ts` runs every property 50 times as long (the suite runs 1×, on random seeds). */
const SCALE = Math.max(1, Number(process.env.LK_PROPERTY_SCALE ?? 1) || 1);

/** The definition of a canonical JSON column: the text is what the canonicaliser makes of its value. */
const canonical = (s: string): boolean => {
  try {
    return canonicalize(JSON.parse(s)) === s;
  } catch {
    return false; // not JSON, or a value the canonicaliser refuses (a number that overflowed to Infinity)
  }
};

/** The serialisation before the fast paths: JSON.stringify per string, the definition per JSON column. */
function referenceBody(tenant: string, r: EntryRow): string | undefined {
  const q = JSON.stringify;
  const json = (v: unknown): v is string => typeof v === 'string' && canonical(v);
  const seq = r[C.seq];
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) return undefined;
  for (const i of [C.ts, C.actor, C.kind, C.action, C.prev_hash]) if (typeof r[i] !== 'string') return undefined;
  let s = `{"action":${q(r[C.action])},"actor":${q(r[C.actor])}`;
  if (r[C.args] !== null) {
    if (!json(r[C.args])) return undefined;
    s += `,"args":${r[C.args] as string}`;
  }
  const intent = r[C.intent];
  if (intent !== null) {
    if (typeof intent !== 'number' || !Number.isSafeInteger(intent)) return undefined;
    s += `,"intent":${intent}`;
  }
  s += `,"kind":${q(r[C.kind])}`;
  for (const [key, i] of [['new', C.new_value], ['old', C.old_value]] as const) {
    if (r[i] === null) continue;
    if (!json(r[i])) return undefined;
    s += `,"${key}":${r[i] as string}`;
  }
  s += `,"prev_hash":${q(r[C.prev_hash])}`;
  if (r[C.reason] !== null) {
    if (typeof r[C.reason] !== 'string') return undefined;
    s += `,"reason":${q(r[C.reason])}`;
  }
  if (r[C.result] !== null) {
    if (!json(r[C.result])) return undefined;
    s += `,"result":${r[C.result] as string}`;
  }
  s += `,"seq":${seq}`;
  if (r[C.signature] !== null) {
    if (!json(r[C.signature])) return undefined;
    s += `,"signature":${r[C.signature] as string}`;
  }
  const subject: string[] = [];
  for (const [key, i] of [['agent', C.agent], ['batch', C.batch], ['reviewer', C.reviewer], ['run', C.run], ['setpoint', C.setpoint], ['tool', C.tool]] as const) {
    if (r[i] === null) continue;
    if (typeof r[i] !== 'string') return undefined;
    subject.push(`"${key}":${q(r[i])}`);
  }
  return `${s},"subject":{${subject.join(',')}},"tenant":${q(tenant)},"ts":${q(r[C.ts])},"v":${ENTRY_FORMAT}}`;
}

// Strings with the characters that need escaping well represented: quotes, backslashes, controls, lone and paired surrogates.
const nasty = fc.constantFrom('"', '\\', '\u0000', '\u001f', '\n', '\ud800', '\udfff', '\ud83d\ude00', 'é', ' ', '/', 'a', '1', ',', ':', '{', '}', '[', ']');
const str = fc.oneof(fc.string({ unit: 'grapheme' }), anyCodePoints(), fc.array(nasty).map((a) => a.join('')));
/** Non-canonical spellings of values append could store, and texts around them (each found or feared). */
const NON_CANONICAL = ['{"":5e324}', '5e324', '-5e324', '1 ', ' 1', '1\n', '[1, 2]', '{"a" :1}', '{"a": 1}', '1.0', '1.50', '1e2', '1E2', '1e+2', '10e-1',
  '-0', '-0.0', '{"a":-0}', '0.30000000000000005', '9007199254740993', '1e21', '100000000000000000000.5', '0.0000001', '"\\u0041"', '"\\/"', '"\\u001F"',
  '"\\u000a"', '"\\ud83d\\ude00"', '"\\uD800"', '"\ud83d\\ude00"', '{"b":1,"a":2}', '{"a":1,"a":2}', '{"\\u0061":1,"b":2}', '"a\u0000"', '1\u0000',
  '{"a":1}\u0000,"intent":3', '"a\u0001"', '"\ud800"', '"\\ud800"', '"a\\udfff"', '{"\\udc00":1}', '{"\uff61":1,"\ud83d\ude00":2}', 'tru', '{"a":1,}', '{"a":1}{"b":2}'];
/** Canonical texts whose canonical form is less obvious: escapes, surrogates, exponents, key order by UTF-16 code units. */
const CANONICAL = ['"\\u0000"', '"\\u001f"', '"\\n\\t\\"\\\\"', '"\ud83d\ude00"', '"\u007f\u2028"', '1e+21', '1e-7', '0.000001',
  '-1.5', '0.30000000000000004', '9007199254740992', '{"\\u0000":1,"a":2}', '{"a":1,"b":[]}', '{"\ud83d\ude00":2,"\uff61":1}', '[]', '{}', '""', 'true', 'null'];

const jsonLike = fc.oneof(
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.jsonValue().map((v) => canonicalize(v) as string),
  fc.constantFrom(...NON_CANONICAL, ...CANONICAL),
  fc.jsonValue().map((v) => JSON.stringify(v, null, 1)),
  // flat objects and primitives as the audit columns hold them, then a character inserted, removed or replaced
  fc.tuple(fc.jsonValue({ maxDepth: 1 }).map((v) => JSON.stringify(v)), fc.nat(), nasty, fc.constantFrom('insert', 'delete', 'replace')).map(([t, at, ch, op]) => {
    const i = t.length === 0 ? 0 : at % t.length;
    return op === 'insert' ? t.slice(0, i) + ch + t.slice(i) : op === 'delete' ? t.slice(0, i) + t.slice(i + 1) : t.slice(0, i) + ch + t.slice(i + 1);
  }),
  fc.constantFrom('01', '-', '1.', '.5', '1e', '+1', '1 ', ' 1', '{"a":1,}', '{"a":1},"intent":3', '{"a":1}{"b":2}', '"a"b"', 'tru', 'nul', 'NaN', '{"a" :1}', '{"a":-0}', '{"a":1e+5}', '{"\\u0041":1}', '{"a":"\u0001"}', '{}', '""'),
  str,
);

describe('row serialisation fast paths', () => {
  it('jsonString equals JSON.stringify on arbitrary strings', () => {
    fc.assert(fc.property(str, (s) => {
      expect(jsonString(s)).toBe(JSON.stringify(s));
    }), { numRuns: 3000 * SCALE });
  });

  it('isCanonicalJson says yes exactly when canonicalize(JSON.parse(t)) === t, and no for non-strings', () => {
    fc.assert(fc.property(jsonLike, (t) => {
      expect(isCanonicalJson(t)).toBe(canonical(t));
    }), { numRuns: 5000 * SCALE });
    // the mutated texts are mostly not JSON: canonical texts of nested values, with numbers of every size, are held too
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 4 }), (v) => {
      const t = canonicalize(v) as string;
      expect(isCanonicalJson(t)).toBe(true);
      const loose = JSON.stringify(v, null, 1);
      expect(isCanonicalJson(loose)).toBe(loose === t);
    }), { numRuns: 2000 * SCALE });
    for (const t of NON_CANONICAL) expect([t, isCanonicalJson(t)]).toEqual([t, false]);
    for (const t of CANONICAL) expect([t, isCanonicalJson(t), canonical(t)]).toEqual([t, true, true]);
    for (const v of [null, 1, Buffer.from('1'), undefined, '']) expect(isCanonicalJson(v)).toBe(false);
  });

  it('canonicalEntry reads the position of every record append writes, and of nothing that is not one', () => {
    fc.assert(fc.property(entryArb(), fc.integer({ min: 1, max: 2 ** 40 }), fc.boolean(), (input, seq, withIntent) => {
      const e = toHashed(parseEntryInput(input), seq, '2026-01-01T00:00:00.000Z', 'ab'.repeat(32), withIntent ? seq - 1 : undefined);
      const body = canonicalJson(e);
      expect(canonicalEntry(body)).toEqual({ tenant: e.tenant, seq, prevHash: e.prev_hash });
      // a member removed, added, retyped or respelled: never a position
      const o = JSON.parse(body) as Record<string, unknown>;
      const variants: unknown[] = [
        { ...o, seq: String(seq) }, { ...o, seq: seq + 0.5 }, { ...o, v: 2 }, { ...o, intent: 'x' }, { ...o, actor: 7 }, { ...o, extra: 1 },
        { ...o, subject: { ...(o.subject as object), run: 1 } }, { ...o, subject: { ...(o.subject as object), line: 'l' } }, { ...o, subject: [] },
        Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'ts')), Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'subject')),
      ];
      for (const v of variants) expect(canonicalEntry(canonicalize(v))).toBeUndefined();
      for (const t of [JSON.stringify(o, null, 1), `${body} `, body.replace(`"seq":${seq}`, `"seq":${seq}.0`), body.replace('"v":1', '"v":1.0'), body.slice(0, -1)]) {
        expect(canonicalEntry(t)).toBeUndefined();
      }
    }), { numRuns: 300 * SCALE });
  });

  it('a text canonicalEntry takes is canonical JSON (the mutations of a record it takes are exactly the canonical ones of the entry\'s shape)', () => {
    const body = canonicalJson(toHashed(parseEntryInput({ tenant: 'acme-pharma', actor: 'system', kind: 'system', action: 'a', subject: { run: 'r' }, args: { a: [1, 'x'] }, reason: 'r' }), 3, '2026-01-01T00:00:00.000Z', '0'.repeat(64)));
    fc.assert(fc.property(fc.nat(), nasty, fc.constantFrom('insert', 'delete', 'replace'), (at, ch, op) => {
      const i = at % body.length;
      const t = op === 'insert' ? body.slice(0, i) + ch + body.slice(i) : op === 'delete' ? body.slice(0, i) + body.slice(i + 1) : body.slice(0, i) + ch + body.slice(i + 1);
      if (canonicalEntry(t) !== undefined) expect(canonical(t)).toBe(true);
      expect(canonicalEntry(t) === undefined || intactRecord(t, createHash('sha256').update(t).digest('hex')) !== undefined).toBe(true);
    }), { numRuns: 3000 * SCALE });
    for (const v of [null, 1, Buffer.from(body), undefined, '', '{}', '[]', body.replace('"tenant":"acme-pharma"', '"tenant":"acme\\u002dpharma"')]) expect(canonicalEntry(v)).toBeUndefined();
    expect(canonicalEntry(body.replace('"tenant":"acme-pharma"', '"tenant":"a\\"b"'))?.tenant).toBe('a"b');
  });

  it('rowBody returns what the plain serialisation returns, on intact and tampered rows', () => {
    const cell = fc.oneof(
      { weight: 4, arbitrary: str },
      { weight: 4, arbitrary: jsonLike },
      { weight: 2, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.constant(2 ** 60), fc.constant(Buffer.from('{}'))) },
    );
    const row = fc.tuple(fc.oneof(fc.nat(), cell), fc.array(cell, { minLength: ENTRY_COLUMNS.length - 1, maxLength: ENTRY_COLUMNS.length - 1 }))
      .map(([seq, rest]) => [seq, ...rest] as EntryRow);
    fc.assert(fc.property(row, fc.oneof(fc.constant('acme-pharma'), str), (r, tenant) => {
      expect(rowBody(tenant, r)).toBe(referenceBody(tenant, r));
    }), { numRuns: 3000 * SCALE });
    // a well-formed row (so the comparison is not only of undefineds)
    const good: EntryRow = [7, '2026-01-01T00:00:00.000Z', 'agent.compress_fill', 'tool_call', 'press.write "x"', 'run_1', null, 'agent.compress_fill', 'press.write_setpoint', 'press.MainForce', null,
      '{"tag":"press.MainForce","value":12.3}', '{"nested":{"a":[1,2]},"ok":true}', 'risk \u00b0C\n', '12', '12.3', 3, null, 'a'.repeat(64), 'b'.repeat(64)];
    expect(rowBody('acme-pharma', good)).toBe(referenceBody('acme-pharma', good));
    expect(rowBody('acme-pharma', good)).toContain('"reason":"risk °C\\n"');
  });

  it('a JSON column holding more than one value (columns shifted into each other) is refused', () => {
    const r: EntryRow = [1, '2026-01-01T00:00:00.000Z', 'system', 'system', 'x', null, null, null, null, null, null,
      '{"a":1},"intent":3', null, null, null, null, null, null, '0'.repeat(64), 'h'];
    expect(rowBody('site', r)).toBeUndefined();
    r[C.args] = '{"a":1}';
    r[C.intent] = 3;
    expect(rowBody('site', r)).toContain('"args":{"a":1},"intent":3');
  });
});

describe('migration 14: a version-13 row copied into its record', () => {
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE audit_entry (tenant TEXT NOT NULL, ${ENTRY_COLUMNS.map((c) => `${c} ${c === 'seq' || c === 'intent' ? 'INTEGER' : 'TEXT'}`).join(', ')})`);
  const insert = db.prepare(`INSERT INTO audit_entry (tenant, ${ENTRY_COLUMNS.join(', ')}) VALUES (${['?', ...ENTRY_COLUMNS.map(() => '?')].join(', ')})`);
  const select = db.prepare(`SELECT ${ENTRY_COLUMNS.join(', ')}, coalesce(${V13_BODY}, ${V13_UNREADABLE}) AS body, tenant FROM audit_entry`).raw();

  /**
   * Insert rows, read them back as SQLite holds them (its type affinity and UTF-8 applied), and compare the record
   * the migration makes of each with what the version-13 verify hashed (rowBody): the same bytes where that was
   * defined, and a record that is no entry where it was not. Returns how many became entries.
   */
  const compare = (tenant: string, rows: EntryRow[]): number => {
    db.exec('DELETE FROM audit_entry');
    for (const r of rows) insert.run(tenant, ...r.map((v) => (typeof v === 'boolean' ? Number(v) : v)));
    let built = 0;
    for (const back of select.all() as unknown[][]) {
      const row = back.slice(0, ENTRY_COLUMNS.length) as EntryRow;
      const record = back[ENTRY_COLUMNS.length];
      // the tenant as SQLite holds it (a lone surrogate is stored as U+FFFD; no real tenant id has one)
      const stored = back[ENTRY_COLUMNS.length + 1] as string;
      const before = rowBody(stored, row);
      expect(typeof record).toBe('string');
      expect(() => JSON.parse(record as string)).not.toThrow();
      if (before !== undefined) {
        expect(record).toBe(before);
        expect(canonicalEntry(record)).toEqual({ tenant: stored, seq: row[C.seq], prevHash: row[C.prev_hash] });
        built++;
      } else expect(canonicalEntry(record)).toBeUndefined();
    }
    return built;
  };

  it('gives every row the bytes it was hashed over, and a row append could not have written no entry at all', () => {
    const cell = fc.oneof(
      { weight: 4, arbitrary: str },
      { weight: 4, arbitrary: jsonLike },
      { weight: 3, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.constant(2 ** 60), fc.constant(-(2 ** 53)), fc.constant(Buffer.from('{}'))) },
    );
    const row = fc.tuple(fc.oneof(fc.nat(), cell), fc.array(cell, { minLength: ENTRY_COLUMNS.length - 1, maxLength: ENTRY_COLUMNS.length - 1 }))
      .map(([seq, rest]) => [seq, ...rest] as EntryRow);
    fc.assert(fc.property(fc.array(row, { minLength: 1, maxLength: 20 }), fc.oneof(fc.constant('acme-pharma'), str.filter((s) => s.length > 0)), (rows, tenant) => {
      compare(tenant, rows);
    }), { numRuns: 400 * SCALE });
    // rows of the right types with arbitrary strings and JSON values: the escaping of both paths compared
    const text = (nullable: boolean) => (nullable ? fc.option(str, { nil: null }) : str);
    const json = fc.option(fc.oneof({ weight: 3, arbitrary: fc.jsonValue().map((v) => canonicalize(v) as string) }, { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) }), { nil: null });
    const typed = fc.tuple(fc.nat(), text(false), text(false), text(false), text(false), ...Array.from({ length: 6 }, () => text(true)),
      json, json, text(true), json, json, fc.option(fc.nat(), { nil: null }), json, text(false), text(false)).map((r) => r as EntryRow);
    let built = 0;
    fc.assert(fc.property(fc.array(typed, { minLength: 1, maxLength: 10 }), (rows) => {
      built += compare('acme-pharma', rows);
    }), { numRuns: 300 * SCALE });
    expect(built).toBeGreaterThan(100);
  });

  it('a JSON column in a non-canonical spelling or holding a NUL becomes no entry, even with a hash recomputed over its record', () => {
    const row = (args: string | null, newValue: string | null): EntryRow => [1, '2026-01-01T00:00:00.000Z', 'system', 'system', 'x', null, null, null, null, null, null,
      args, null, null, null, newValue, null, null, '0'.repeat(64), 'h'];
    expect(compare('acme-pharma', [row('{"":5e324}', '1 ')])).toBe(0);
    // (a raw lone surrogate is stored by SQLite as U+FFFD, which is canonical: those texts are not what the table holds)
    const stored = NON_CANONICAL.filter((t) => db.prepare('SELECT ?').pluck().get(t) === t);
    expect(stored.length).toBeGreaterThan(NON_CANONICAL.length - 3);
    for (const t of stored) expect([t, compare('acme-pharma', [row(t, null)]), compare('acme-pharma', [row(null, t)])]).toEqual([t, 0, 0]);
    db.exec('DELETE FROM audit_entry');
    insert.run('site', ...row('{"a":1}\u0000,"intent":3', null));
    const unreadable = (select.all() as unknown[][])[0]![ENTRY_COLUMNS.length] as string;
    expect(JSON.parse(unreadable)).toHaveProperty('unreadable_v13_row');
    expect(intactRecord(unreadable, createHash('sha256').update(unreadable).digest('hex'))).toBeUndefined();
    // the canonical spelling becomes its entry; the record of a respelled one is not intact even when its hash is recomputed
    expect(compare('acme-pharma', [row('{"":5}', '1')])).toBe(1);
    db.prepare('UPDATE audit_entry SET new_value = ?').run('1.0');
    const rewritten = (select.all() as unknown[][])[0]![ENTRY_COLUMNS.length] as string;
    expect(rewritten).toContain('"new":1.0,');
    expect(intactRecord(rewritten, createHash('sha256').update(rewritten).digest('hex'))).toBeUndefined();
  });

  it('copies well-formed rows byte for byte (so the comparison above is not only of refusals), escapes included', () => {
    const good = (i: number): EntryRow => [i, '2026-01-01T00:00:00.000Z', 'agent.compress_fill', 'tool_call', `press.write "x" \\ ${i}`, i % 2 ? 'run_1' : null, null, 'agent.compress_fill', 'press.write_setpoint', 'press.MainForce', null,
      '{"s":"a\\"b\\u0001","tag":"press.MainForce","value":12.3}', i % 3 ? null : '{"nested":{"a":[1,2]},"ok":true}', 'risk \u00b0C\n\t\u0001\u007f\u2028', '12', '12.3', i % 2 ? 3 : null, null, 'a'.repeat(64), 'b'.repeat(64)];
    expect(compare('acme-pharma', Array.from({ length: 12 }, (_, i) => good(i + 1)))).toBe(12);
    const body = (select.all() as unknown[][])[0]![ENTRY_COLUMNS.length];
    expect(body).toContain('"reason":"risk °C\\n\\t\\u0001\u007f\u2028"');
    // a JSON column holding two values (columns shifted into each other) is no entry, as in body.ts
    db.prepare('UPDATE audit_entry SET args = ? WHERE seq = 1').run('{"a":1},"intent":3');
    expect(canonicalEntry((select.all() as unknown[][])[0]![ENTRY_COLUMNS.length])).toBeUndefined();
  });
});
