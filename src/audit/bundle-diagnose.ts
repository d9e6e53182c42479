/**
 * The walk over a bundle's entry lines, in file order, against the segments
 * its signed header declares. It reads them one at a time with the next two in
 * view, and only on damage the rest of them: a bundle's entries are never all
 * held at once (a million-entry trail's would be ~280 MB of heap). The walk is
 * the same as when it read an array of them: `at(k)` is what `items[i + k]`
 * was. tools/verify-audit-bundle.mjs carries a line-by-line copy of this
 * function (it may import nothing of ours); the agreement test runs both on
 * the same damaged bundles. Change both or neither.
 */
import type { SignedCheckpoint } from './checkpoints.js';
import type { Damage, DamageKind } from './verify.js';

/** One entry line: its claimed position and links, and whether its content matches its hash; null when unreadable. */
export type BundleItem = { seq: unknown; prev: unknown; hash: unknown; tenant: unknown; hashOk: boolean } | null;

/** Entry lines in file order, the current one and those after it in view; each read once, from `items`. */
class Lookahead {
  private readonly buf: BundleItem[] = [];
  private ended = false;
  constructor(private readonly items: Iterator<BundleItem>) {}

  /** The k-th line from the current one (0: the current one); undefined past the last. */
  at(k: number): BundleItem | undefined {
    while (this.buf.length <= k && !this.ended) {
      const r = this.items.next();
      if (r.done) this.ended = true;
      else this.buf.push(r.value);
    }
    return k < this.buf.length ? this.buf[k] : undefined;
  }

  /** Move past the current line. */
  skip(): void {
    this.buf.shift();
  }

  /** Whether a line from the k-th on satisfies `p`, reading on to the end if need be (and keeping none of those). */
  someFrom(k: number, p: (x: BundleItem) => boolean): boolean {
    for (let j = k; j < this.buf.length; j++) if (p(this.buf[j]!)) return true;
    for (let r = this.items.next(); !r.done; r = this.items.next()) if (p(r.value)) return true;
    this.ended = true;
    return false;
  }

  /** How many lines from the current one to the last (reads to the end). */
  rest(): number {
    let n = this.buf.length;
    this.buf.length = 0;
    while (!this.ended && !this.items.next().done) n++;
    this.ended = true;
    return n;
  }
}

export function diagnoseBundle(
  items: Iterable<BundleItem>,
  segments: readonly (readonly [number, number])[],
  checkpoints: readonly SignedCheckpoint[],
  tenant: string,
  genesis: string,
): { damage?: Damage; head: { seq: number; hash: string } | null } {
  const cp = new Map<number, string>();
  for (const c of checkpoints) if (!cp.has(c.seq)) cp.set(c.seq, c.head_hash);
  const d = (kind: DamageKind, seq: number | null, detail: string): { damage: Damage; head: null } => ({ damage: { kind, seq, detail }, head: null });
  const ok = (x: BundleItem | undefined, e: number, ph: string): boolean =>
    !!x && x.hashOk && x.seq === e && x.prev === ph && x.tenant === tenant;
  const line = new Lookahead(items[Symbol.iterator]());
  let head: { seq: number; hash: string } | null = null;
  for (const [from, to] of segments) {
    const anchor = from === 1 ? genesis : cp.get(from - 1);
    if (anchor === undefined) return d('checkpoint_missing', from - 1, `no valid checkpoint at seq ${from - 1} anchors the segment starting at ${from}`);
    let ph = anchor;
    let lastGood = from - 1;
    for (let e = from; e <= to; e++) {
      const x = line.at(0);
      if (x === undefined) return d('truncated', e, `bundle ends before entry ${e}`);
      if (ok(x, e, ph)) {
        const before = ph;
        ph = x!.hash as string;
        line.skip();
        const c = cp.get(e);
        if (c !== undefined) {
          const y = line.at(0);
          // The genuine entry right behind an accepted forgery: the forgery was inserted.
          if (c !== ph && y && y.hashOk && y.seq === e && y.prev === before && y.hash === c) return d('inserted', e, `an extra line sits before entry ${e}`);
          if (c !== ph) return d('rewritten', lastGood + 1, `entries ${lastGood + 1}..${e} differ from the signed checkpoint at seq ${e}`);
          lastGood = e;
        }
        continue;
      }
      if (x === null) return d('edited', e, `the line of entry ${e} is unreadable`);
      if (ok(line.at(1), e, ph)) return d('inserted', e, `an extra line sits before entry ${e}`);
      if (!x.hashOk) return d('edited', e, `entry ${e} does not match its hash`);
      if (x.tenant !== tenant) return d('inserted', e, `an entry of another chain sits at ${e}`);
      if (typeof x.seq !== 'number' || !Number.isSafeInteger(x.seq)) return d('edited', e, `entry ${e} has no valid seq`);
      if (x.seq < e) return d('inserted', x.seq === e - 1 ? e - 1 : e, `entry ${x.seq} appears again at position ${e}`);
      if (x.seq > e) {
        const later = line.someFrom(1, (z) => ok(z, e, ph));
        return later ? d('reordered', e, `entry ${e} appears after entry ${x.seq}`) : d('deleted', e, `entry ${e} is missing`);
      }
      return e > from ? d('edited', e - 1, `entry ${e} does not link to entry ${e - 1}: ${e - 1} was replaced`) : d('edited', e, `entry ${e} does not link to the checkpoint before it`);
    }
    if (!cp.has(to)) return d('checkpoint_missing', to, `no valid checkpoint closes the segment ending at ${to}`);
    head = { seq: to, hash: ph };
  }
  const x = line.at(0);
  if (x !== undefined) return d('inserted', x && typeof x.seq === 'number' ? x.seq : null, `${line.rest()} entry lines beyond the declared segments`);
  return { head };
}
