import { createHash } from 'node:crypto';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { rowBody } from '../../src/audit/body.js';
import { checkpointLogFile, readCheckpointLog } from '../../src/audit/checkpoints.js';
import { ENTRY_COLUMNS, GENESIS_HASH, type EntryRow } from '../../src/audit/entry.js';
import { keyFiles } from '../../src/audit/keys.js';
import { verifyStore } from '../../src/audit/verify.js';
import { codeOf, entry, entryArb, newStore, tempDir } from './audit-helpers.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});
function dir(): string {
  const t = tempDir();
  cleanups.push(t.cleanup);
  return t.dir;
}
const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

describe('audit.append', () => {
  it('[R12] [P11.10(e)] numbers each chain gap-free from 1, links prev_hash, hashes the canonical JSON of the entry, stamps UTC ms from the clock', () => {
    const { store, clock } = newStore(dir());
    clock.set(Date.UTC(2026, 2, 4, 5, 6, 7, 89));
    const a1 = store.audit.append(entry(1, 'acme-pharma'));
    const b1 = store.audit.append(entry(2, 'borealis-bio'));
    clock.advance(1);
    const a2 = store.audit.append(entry(3, 'acme-pharma'));
    expect([a1.seq, b1.seq, a2.seq]).toEqual([1, 1, 2]);
    expect(a1.prev_hash).toBe(GENESIS_HASH);
    expect(a2.prev_hash).toBe(a1.hash);
    expect(a1.ts).toBe('2026-03-04T05:06:07.089Z');
    expect(a2.ts).toBe('2026-03-04T05:06:07.090Z');
    const { hash, ...hashed } = a2;
    expect(hash).toBe(sha(canonicalize(hashed)!));
    expect(Object.keys(hashed).sort()).toEqual(['action', 'actor', 'args', 'kind', 'new', 'old', 'prev_hash', 'reason', 'seq', 'subject', 'tenant', 'ts', 'v']);
    store.close();
  });

  it.each([
    ['NaN', { args: { v: Number.NaN } }],
    ['Infinity', { new: Number.POSITIVE_INFINITY }],
    ['a lone surrogate', { reason: 'bad \ud800 text' }],
    ['an unknown field', { colour: 'red' }],
    ['a bad tenant', { tenant: 'Acme Pharma' }],
    ['a bad actor', { actor: 'agent.' }],
    ['a bad kind', { kind: 'Tool Call' }],
    ['a Date object', { args: { at: new Date(0) } }],
    ['an unknown subject', { subject: { lot: 'x' } }],
  ])('refuses %s with LK_VALIDATION and writes nothing', (_what, patch) => {
    const { store } = newStore(dir());
    store.audit.append(entry(0));
    expect(codeOf(() => store.audit.append({ ...entry(1), ...patch } as never))).toBe('LK_VALIDATION');
    expect(codeOf(() => store.audit.appendBatch([entry(2), { ...entry(3), ...patch } as never]))).toBe('LK_VALIDATION');
    expect(store.audit.head('acme-pharma').seq).toBe(1);
    store.close();
  });

  it('appendBatch commits many entries of several chains in one transaction', () => {
    const { store } = newStore(dir());
    const out = store.audit.appendBatch([entry(1), entry(2, 'borealis-bio'), entry(3), entry(4)]);
    expect(out.map((e) => `${e.tenant}#${e.seq}`)).toEqual(['acme-pharma#1', 'borealis-bio#1', 'acme-pharma#2', 'acme-pharma#3']);
    expect(out[2]!.prev_hash).toBe(out[0]!.hash);
    expect(verifyStore(store).ok).toBe(true);
    store.close();
  });

  it('two-phase entries: an intent stays open until its outcome; a second outcome or a bad ref is refused', () => {
    const { store } = newStore(dir());
    const ref = store.audit.intent({ tenant: 'acme-pharma', actor: 'agent.compress_fill', action: 'press.write_setpoint', subject: { setpoint: 'press.MainForce' }, args: { value: 14, unit: 'kN' } });
    expect(store.audit.openIntents('acme-pharma').map((e) => e.seq)).toEqual([ref.seq]);
    expect(store.audit.openIntents('borealis-bio')).toEqual([]);
    const out = store.audit.outcome(ref, { actor: 'agent.compress_fill', action: 'press.write_setpoint', result: { readback: 14 }, old: 12, new: 14 });
    expect(out.kind).toBe('outcome');
    expect(out.intent).toBe(ref.seq);
    expect(store.audit.openIntents('acme-pharma')).toEqual([]);
    expect(codeOf(() => store.audit.outcome(ref, { actor: 'system', action: 'again' }))).toBe('LK_CONFLICT');
    expect(codeOf(() => store.audit.outcome({ ...ref, seq: 99 }, { actor: 'system', action: 'x' }))).toBe('LK_NOT_FOUND');
    expect(codeOf(() => store.audit.outcome({ ...ref, tenant: 'borealis-bio' }, { actor: 'system', action: 'x' }))).toBe('LK_NOT_FOUND');
    expect(codeOf(() => store.audit.outcome({ tenant: 'acme-pharma', seq: out.seq, hash: out.hash }, { actor: 'system', action: 'x' }))).toBe('LK_NOT_FOUND');
    store.close();
  });

  it('the fast row serialisation used by verify equals canonicalize() of the hashed object for random entries', () => {
    const { store } = newStore(dir());
    const sel = store.db.prepare(`SELECT ${ENTRY_COLUMNS.join(', ')} FROM audit_entry WHERE tenant = ? AND seq = ?`).raw();
    fc.assert(
      fc.property(entryArb(), (input) => {
        const e = store.audit.append(input);
        const { hash, ...hashed } = e;
        const body = rowBody('acme-pharma', sel.get('acme-pharma', e.seq) as EntryRow);
        expect(body).toBe(canonicalize(hashed));
        expect(sha(body!)).toBe(hash);
      }),
      { numRuns: 200 },
    );
    expect(verifyStore(store).ok).toBe(true);
    store.close();
  });
});

describe('checkpoints and the site key', () => {
  it('signs a checkpoint every N entries and after T seconds, in the database and the log file, and at clean stop', () => {
    const d = dir();
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const { store } = newStore(d, { clock, audit: { checkpointEvery: 5, checkpointIntervalS: 60 } });
    for (let i = 1; i <= 12; i++) store.audit.append(entry(i));
    const seqs = (): number[] => store.db.prepare("SELECT seq FROM audit_checkpoint WHERE tenant = 'acme-pharma' ORDER BY seq").pluck().all() as number[];
    expect(seqs()).toEqual([5, 10]);
    clock.advance(61_000);
    store.audit.append(entry(13));
    expect(seqs()).toEqual([5, 10, 13]);
    store.audit.append(entry(14));
    clock.advance(61_000);
    expect(store.audit.checkpointDue().map((c) => c.seq)).toEqual([14]);
    store.audit.append(entry(15));
    store.close();
    const log = readCheckpointLog(checkpointLogFile(d));
    expect(log.checkpoints.map((c) => c.seq)).toEqual([5, 10, 13, 14, 15]);
    expect(log.badLines).toEqual([]);
  });

  it('a checkpoint line torn by a crash is cut off by the next checkpoint, so verify stays intact', () => {
    const d = dir();
    const { store, clock } = newStore(d, { audit: { checkpointEvery: 5, checkpointIntervalS: 3600 } });
    for (let i = 1; i <= 5; i++) store.audit.append(entry(i));
    store.close();
    const file = checkpointLogFile(d);
    const good = readFileSync(file, 'utf8');
    // the crash: half of a checkpoint line reached the disk, its database row never did
    writeFileSync(file, `${good}${good.slice(0, 60)}`);
    expect(readCheckpointLog(file).badLines).toEqual([]); // a torn last line is tolerated as such
    const again = newStore(d, { clock, audit: { checkpointEvery: 5, checkpointIntervalS: 3600 } }).store;
    for (let i = 6; i <= 10; i++) again.audit.append(entry(i));
    again.close();
    const log = readCheckpointLog(file);
    expect(log.badLines).toEqual([]);
    expect(log.checkpoints.map((c) => c.seq)).toEqual([5, 10]);
    const reopened = newStore(d, { clock, readonly: true }).store;
    try {
      expect(verifyStore(reopened, {}).ok).toBe(true);
    } finally {
      reopened.close();
    }
  });

  it('a second process (a CLI export beside the daemon) may sign the same head first: no error, one row', () => {
    const d = dir();
    const daemon = newStore(d).store;
    const cli = newStore(d).store;
    daemon.audit.append(entry(1));
    daemon.audit.append(entry(2));
    expect(cli.audit.checkpoint('acme-pharma')?.seq).toBe(2);
    expect(daemon.audit.checkpoint('acme-pharma')?.seq).toBe(2);
    expect(daemon.db.prepare('SELECT COUNT(*) FROM audit_checkpoint').pluck().get()).toBe(1);
    cli.close();
    daemon.close();
    const ro = newStore(d, { readonly: true }).store;
    expect(verifyStore(ro).ok).toBe(true);
    ro.close();
  });

  it('creates the private key 0600 once, keeps it across restarts, refuses one readable by others', () => {
    const d = dir();
    const { store } = newStore(d);
    const id = store.audit.siteKey().keyId;
    store.close();
    const { privateFile, publicFile } = keyFiles(d);
    expect(statSync(privateFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(publicFile, 'utf8')).toContain('BEGIN PUBLIC KEY');
    const again = newStore(d).store;
    expect(again.audit.siteKey().keyId).toBe(id);
    again.close();
    chmodSync(privateFile, 0o644);
    expect(codeOf(() => newStore(d))).toBe('LK_AUDIT_KEY');
    chmodSync(privateFile, 0o600);
    writeFileSync(privateFile, 'not a key');
    expect(codeOf(() => newStore(d))).toBe('LK_AUDIT_KEY');
  });

  it('refuses to start with a different site key than the one that signed the checkpoints', () => {
    const a = dir();
    const b = dir();
    const s = newStore(a).store;
    s.audit.append(entry(1));
    s.close(); // signs a checkpoint with a's key
    newStore(b).store.close();
    const { privateFile, publicFile } = keyFiles(a);
    writeFileSync(privateFile, readFileSync(keyFiles(b).privateFile), { mode: 0o600 });
    writeFileSync(publicFile, readFileSync(keyFiles(b).publicFile));
    expect(codeOf(() => newStore(a))).toBe('LK_AUDIT_KEY');
  });
});
