/**
 * The fast paths of the row serialisation (body.ts) change no verdict: the string quoting equals
 * JSON.stringify, the JSON-column check equals "canonicalize(JSON.parse(t)) === t", and rowBody returns the
 * same bytes (or the same undefined) as the straightforward serialisation, on intact and on tampered rows;
 * and the bytes the verify fast path stands behind (SQLite's body, body-sql.ts, through fastBody) are
 * rowBody's, and undefined exactly where it refuses.
 */
import Database from 'better-sqlite3';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { BODY_SQL, fastBody, fastIntact, JSON_COLUMNS_SQL } from '../../src/audit/body-sql.js';
import { describe, expect, it } from 'vitest';
import { jsonString, rowBody } from '../../src/audit/body.js';
import { canonicalSegments, isCanonicalJson } from '../../src/audit/canonical-text.js';
import { COL as C, ENTRY_COLUMNS, ENTRY_FORMAT, type EntryRow } from '../../src/audit/entry.js';

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
const str = fc.oneof(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.array(nasty).map((a) => a.join('')));
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

  it('canonicalSegments says yes exactly when every NUL-separated text is canonical (the fast path\'s JSON columns)', () => {
    fc.assert(fc.property(fc.array(jsonLike, { maxLength: 5 }), (texts) => {
      const joined = texts.join('\u0000');
      const want = texts.every((t) => !t.includes('\u0000') && canonical(t));
      // a text holding a NUL splits differently, and an empty one is the empty list: SQLite never joins either
      // (json_valid refuses the empty text, and a column holding a NUL gets no fast path)
      if (texts.some((t) => t.includes('\u0000') || t === '')) return;
      expect(canonicalSegments(joined)).toBe(want);
    }), { numRuns: 3000 * SCALE });
    expect(canonicalSegments('')).toBe(true);
    expect(canonicalSegments('1\u0000')).toBe(false);
    expect(canonicalSegments('\u00001')).toBe(false);
    expect(canonicalSegments('{"a":1}\u0000"x"\u000012.5')).toBe(true);
    expect(canonicalSegments('{"a":1}\u00001.0')).toBe(false);
    expect(canonicalSegments(null)).toBe(false);
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

describe('the canonical bytes built by SQLite (body-sql.ts, the verify fast path)', () => {
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE audit_entry (tenant TEXT NOT NULL, ${ENTRY_COLUMNS.map((c) => `${c} ${c === 'seq' || c === 'intent' ? 'INTEGER' : 'TEXT'}`).join(', ')})`);
  const insert = db.prepare(`INSERT INTO audit_entry (tenant, ${ENTRY_COLUMNS.join(', ')}) VALUES (${['?', ...ENTRY_COLUMNS.map(() => '?')].join(', ')})`);
  const select = db.prepare(`SELECT ${ENTRY_COLUMNS.join(', ')}, ${BODY_SQL} AS body, tenant, ${JSON_COLUMNS_SQL} AS cols FROM audit_entry`).raw();

  /** Insert rows, read them back as SQLite holds them (its type affinity and UTF-8 applied), and compare both paths. */
  const compare = (tenant: string, rows: EntryRow[]): number => {
    db.exec('DELETE FROM audit_entry');
    for (const r of rows) insert.run(tenant, ...r.map((v) => (typeof v === 'boolean' ? Number(v) : v)));
    let built = 0;
    for (const back of select.all() as unknown[][]) {
      const row = back.slice(0, ENTRY_COLUMNS.length) as EntryRow;
      const sql = back[ENTRY_COLUMNS.length];
      // the tenant as SQLite holds it (a lone surrogate is stored as U+FFFD; no real tenant id has one)
      const stored = back[ENTRY_COLUMNS.length + 1] as string;
      // the fast path stands behind bytes only for rows body.ts builds too, and then the same bytes
      const fast = fastBody(sql, back[ENTRY_COLUMNS.length + 2]);
      expect(fast).toBe(rowBody(stored, row));
      // what the fast path stands behind is canonical JSON as a whole (the envelope is, by construction)
      if (fast !== undefined) expect(isCanonicalJson(fast)).toBe(true);
      if (fast !== undefined) built++;
    }
    return built;
  };

  it('equals rowBody on random intact and tampered rows, and is NULL exactly where rowBody refuses', () => {
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

  it('stands behind no bytes for a JSON column in a non-canonical spelling or holding a NUL, even with a recomputed hash', () => {
    const row = (args: string | null, newValue: string | null): EntryRow => [1, '2026-01-01T00:00:00.000Z', 'system', 'system', 'x', null, null, null, null, null, null,
      args, null, null, null, newValue, null, null, '0'.repeat(64), 'h'];
    // the counterexample that made the suite red: 5e324 overflows to Infinity, "1 " has a trailing space
    expect(compare('acme-pharma', [row('{"":5e324}', '1 ')])).toBe(0);
    // (a raw lone surrogate is stored by SQLite as U+FFFD, which is canonical: those texts are not what the table holds)
    const stored = NON_CANONICAL.filter((t) => db.prepare('SELECT ?').pluck().get(t) === t);
    expect(stored.length).toBeGreaterThan(NON_CANONICAL.length - 3);
    for (const t of stored) expect([t, compare('acme-pharma', [row(t, null)]), compare('acme-pharma', [row(null, t)])]).toEqual([t, 0, 0]);
    // json_valid reads up to a NUL: a column that smuggles a second member behind one gets no bytes from SQLite at all
    db.exec('DELETE FROM audit_entry');
    insert.run('site', ...row('{"a":1}\u0000,"intent":3', null));
    expect((select.all() as unknown[][])[0]![ENTRY_COLUMNS.length]).toBeNull();
    // the same row in canonical spelling gets its bytes, and a hash recomputed over a rewritten spelling does not make it intact
    expect(compare('acme-pharma', [row('{"":5}', '1')])).toBe(1);
    const [sqlBody, cols] = db.prepare(`SELECT ${BODY_SQL}, ${JSON_COLUMNS_SQL} FROM audit_entry`).raw().get() as [string, string];
    db.prepare('UPDATE audit_entry SET new_value = ?').run('1.0');
    const [rewritten, rewrittenCols] = db.prepare(`SELECT ${BODY_SQL}, ${JSON_COLUMNS_SQL} FROM audit_entry`).raw().get() as [string, string];
    expect(rewritten).toBe(sqlBody.replace('"new":1,', '"new":1.0,'));
    expect(fastIntact([1, '0'.repeat(64), createHash('sha256').update(rewritten).digest('hex'), rewritten, rewrittenCols])).toBe(false);
    expect(fastIntact([1, '0'.repeat(64), createHash('sha256').update(sqlBody).digest('hex'), sqlBody, cols])).toBe(true);
  });

  it('builds the bytes of well-formed rows (so the comparison above is not only of NULLs), escapes included', () => {
    const good = (i: number): EntryRow => [i, '2026-01-01T00:00:00.000Z', 'agent.compress_fill', 'tool_call', `press.write "x" \\ ${i}`, i % 2 ? 'run_1' : null, null, 'agent.compress_fill', 'press.write_setpoint', 'press.MainForce', null,
      '{"s":"a\\"b\\u0001","tag":"press.MainForce","value":12.3}', i % 3 ? null : '{"nested":{"a":[1,2]},"ok":true}', 'risk \u00b0C\n\t\u0001\u007f\u2028', '12', '12.3', i % 2 ? 3 : null, null, 'a'.repeat(64), 'b'.repeat(64)];
    expect(compare('acme-pharma', Array.from({ length: 12 }, (_, i) => good(i + 1)))).toBe(12);
    const [, , , body] = [0, 0, 0, (select.all() as unknown[][])[0]![ENTRY_COLUMNS.length]];
    expect(body).toContain('"reason":"risk °C\\n\\t\\u0001\u007f\u2028"');
    // a JSON column holding two values (columns shifted into each other) gets no bytes, as in body.ts
    db.prepare('UPDATE audit_entry SET args = ? WHERE seq = 1').run('{"a":1},"intent":3');
    expect((select.all() as unknown[][])[0]![ENTRY_COLUMNS.length]).toBeNull();
  });
});
