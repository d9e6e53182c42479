/**
 * The walk over a bundle's entry lines (src/audit/bundle-diagnose.ts) reads them one at a time: it never asks for
 * a line more than two ahead of the last it accepted, so a bundle's verification holds a few lines, not all of them
 * (a million-entry trail's would be ~280 MB of heap); and on damage it stops where the damage is, unless it must
 * scan the rest to tell a reordered entry from a deleted one. The agreement of its verdicts with the standalone
 * verifier is test/integration/audit-bundle.int.spec.ts's.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { diagnoseBundle, type BundleItem } from '../../src/audit/bundle-diagnose.js';
import type { SignedCheckpoint } from '../../src/audit/checkpoints.js';
import { GENESIS_HASH } from '../../src/audit/entry.js';

const T = 'acme-pharma';
const h = (n: number): string => createHash('sha256').update(String(n)).digest('hex');
const checkpoint = (seq: number): SignedCheckpoint => ({ v: 1, tenant: T, seq, head_hash: h(seq), ts: '2026-11-29T00:00:00.000Z', key_id: 'k', sig: 's' });

/** Entry lines 1..n of an intact chain, counting how far they were read and the last one the walk took (read its hash). */
function chain(n: number, edit?: (seq: number) => Partial<NonNullable<BundleItem>> | null) {
  const seen = { pulled: 0, taken: 0, maxAhead: 0 };
  function* lines(): Generator<BundleItem> {
    for (let seq = 1; seq <= n; seq++) {
      seen.pulled = seq;
      seen.maxAhead = Math.max(seen.maxAhead, seen.pulled - seen.taken);
      const changed = edit?.(seq);
      if (changed === null) {
        yield null;
        continue;
      }
      const item = { seq, prev: seq === 1 ? GENESIS_HASH : h(seq - 1), tenant: T, hashOk: true, ...changed };
      // the walk reads an accepted line's hash as the next one's expected link
      let hash: unknown = changed?.hash ?? h(seq);
      Object.defineProperty(item, 'hash', { enumerable: true, get: () => ((seen.taken = Math.max(seen.taken, seq)), hash), set: (v) => (hash = v) });
      yield item as NonNullable<BundleItem>;
    }
  }
  return { seen, lines };
}

describe('the walk over a bundle\'s entry lines', () => {
  it('reads an intact bundle of 100,000 lines at most two ahead of the last it took, to its verified head', () => {
    const { seen, lines } = chain(100_000);
    const r = diagnoseBundle(lines(), [[1, 100_000]], [checkpoint(100_000)], T, GENESIS_HASH);
    expect(r).toEqual({ head: { seq: 100_000, hash: h(100_000) } });
    expect(seen.pulled).toBe(100_000);
    expect(seen.maxAhead).toBeLessThanOrEqual(2);
  });

  it('stops at a damage it can name from the lines in view; reads on to the end only to tell a reordered line from a deleted one', () => {
    const edited = chain(100_000, (seq) => (seq === 500 ? { hashOk: false } : {}));
    expect(diagnoseBundle(edited.lines(), [[1, 100_000]], [checkpoint(100_000)], T, GENESIS_HASH).damage).toMatchObject({ kind: 'edited', seq: 500 });
    expect(edited.seen.pulled).toBeLessThanOrEqual(502);
    const unreadable = chain(100_000, (seq) => (seq === 7 ? null : {}));
    expect(diagnoseBundle(unreadable.lines(), [[1, 100_000]], [checkpoint(100_000)], T, GENESIS_HASH).damage).toMatchObject({ kind: 'edited', seq: 7 });
    expect(unreadable.seen.pulled).toBeLessThanOrEqual(8);
    // entry 300 missing: the line at its place is 301; whether 300 comes later needs the rest
    const missing = chain(1_000, (seq) => (seq >= 300 ? { seq: seq + 1, prev: h(seq), hash: h(seq + 1) } : {}));
    expect(diagnoseBundle(missing.lines(), [[1, 1_000]], [checkpoint(1_000)], T, GENESIS_HASH).damage).toMatchObject({ kind: 'deleted', seq: 300 });
    expect(missing.seen.pulled).toBe(1_000);
  });

  it('counts the lines beyond the declared segments to the end', () => {
    const { lines } = chain(1_200);
    expect(diagnoseBundle(lines(), [[1, 1_000]], [checkpoint(1_000)], T, GENESIS_HASH).damage).toEqual({ kind: 'inserted', seq: 1_001, detail: '200 entry lines beyond the declared segments' });
  });
});
