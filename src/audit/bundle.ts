/**
 * The audit bundle: a JSON Lines export of one tenant's trail that verifies
 * offline, here (`linekeeper audit verify --bundle`) and with the standalone
 * tools/verify-audit-bundle.mjs, which must reach the same verdict (tested).
 *
 * Lines: a signed header (tenant, filter, segments, counts, public key), then
 * the signed checkpoints, then the entries. A filtered export cannot prove an
 * isolated entry on its own (its hash depends on every entry before it), so it
 * carries whole checkpoint intervals: each segment [from, to] starts right
 * after a signed checkpoint (or at seq 1) and ends on one, and every entry of
 * those intervals is included, `in_filter` marking the ones the filter chose.
 * The signed header (version 2) lists the chosen seqs as ranges (`selected`),
 * so a flipped `in_filter` flag — an entry hidden from, or slipped into, the
 * filtered view — is damage at that seq. Version 1 bundles (before this) are
 * still verified, but their flags are covered by nothing.
 * docs/audit.md describes the format for auditors.
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { createHash, hash } from 'node:crypto';
import type { Store } from '../store/store.js';
import { LkError } from '../errors.js';
import { asCheckpoint, checkpointSignatureValid, type SignedCheckpoint } from './checkpoints.js';
import { canonicalJson, GENESIS_HASH, type AuditEntry } from './entry.js';
import { parsePublicKey, readSiteKey, signBytes, verifyBytes, type PublicSiteKey } from './keys.js';
import type { AuditFilter } from './query.js';
import { assertValidFilter, EVERY_ENTRY, selectEntries, type ValidFilter } from './select.js';
import { diagnoseBundle, type BundleItem } from './bundle-diagnose.js';
import { firstDamage, type Damage } from './verify.js';

export const BUNDLE_FORMAT = 'linekeeper.audit-bundle';

export interface BundleHeader {
  type: 'header';
  format: typeof BUNDLE_FORMAT;
  /** 2 since the `in_filter` flags are signed (`selected`); 1 is still read. */
  version: 1 | 2;
  tenant: string;
  exported_at: string;
  filter: AuditFilter;
  /** Inclusive seq ranges, ascending; each starts after a checkpoint (or at 1) and ends on one. */
  segments: [number, number][];
  /** Inclusive seq ranges of the entries the filter chose (`in_filter: true`), ascending (version 2). */
  selected?: [number, number][];
  entries: number;
  checkpoints: number;
  key_id: string;
  public_key: string;
  /** Ed25519 (base64) over the canonical JSON of the header without `sig`. */
  sig: string;
}

/**
 * The lines of a bundle of `tenant`'s entries matching `f` (validated by the caller: `parseFilter`).
 * Signs a checkpoint of the chain head first, so the newest entries are anchored too — except on a
 * read-only store (a write-protected copy), where the bundle ends at the last checkpoint already
 * signed and is signed with the copy's key file.
 * @throws LkError LK_NOT_FOUND when the tenant has no chain; LK_INTERNAL for a filter `parseFilter` did not return;
 *   LK_AUDIT_KEY when a read-only copy carries no readable private key.
 */
export function* bundleLines(store: Store, tenant: string, f: ValidFilter = EVERY_ENTRY): Generator<string> {
  assertValidFilter(f);
  if (!store.audit.chains().includes(tenant)) throw new LkError('LK_NOT_FOUND', `no audit chain "${tenant}"`, { tenant });
  if (!store.readonly) store.audit.checkpoint(tenant);
  const key = store.readonly ? readSiteKey(store.dataDir) : store.audit.siteKey();
  const cps = (store.db.prepare('SELECT tenant, seq, head_hash, ts, key_id, sig FROM audit_checkpoint WHERE tenant = ? ORDER BY seq').all(tenant) as Record<string, unknown>[])
    .map((r) => asCheckpoint({ v: 1, ...r }))
    .filter((c): c is SignedCheckpoint => c !== undefined && c.key_id === key.keyId);
  const bounds = [0, ...cps.map((c) => c.seq)];
  const matched = matchedSeqs(store, tenant, f);
  const segments = segmentsFor(bounds, matched);
  const included = cps.filter((c) => segments.some(([from, to]) => c.seq >= from - 1 && c.seq <= to));
  const last = segments[segments.length - 1]?.[1] ?? 0;
  const selected = matched === 'all' ? segments : toRanges(matched.filter((m) => m <= last));
  const unsigned = {
    type: 'header' as const, format: BUNDLE_FORMAT, version: 2 as const, tenant, exported_at: new Date(store.clock.now()).toISOString(), filter: f,
    segments, selected, entries: segments.reduce((n, [a, b]) => n + b - a + 1, 0), checkpoints: included.length, key_id: key.keyId, public_key: key.publicPem,
  };
  yield canonicalJson({ ...unsigned, sig: signBytes(key, canonicalJson(unsigned)) });
  for (const c of included) yield canonicalJson({ type: 'checkpoint', ...c });
  const chosen = matched === 'all' ? undefined : new Set(matched);
  for (const [from, to] of segments) {
    for (const e of selectEntries(store.db, tenant, EVERY_ENTRY, { fromSeq: from, toSeq: to })) {
      const { hash: h, ...hashed } = e;
      yield canonicalJson({ type: 'entry', in_filter: chosen === undefined || chosen.has(e.seq), hash: h, entry: hashed });
    }
  }
}

/** Write a bundle to `file` (fsync'd); returns the number of lines. */
export function exportBundle(store: Store, tenant: string, filter: ValidFilter, file: string): number {
  assertValidFilter(filter);
  const fd = openSync(file, 'w', 0o644);
  let n = 0;
  try {
    for (const line of bundleLines(store, tenant, filter)) {
      writeSync(fd, `${line}\n`);
      n++;
    }
  } finally {
    closeSync(fd);
  }
  return n;
}

function matchedSeqs(store: Store, tenant: string, f: ValidFilter): number[] | 'all' {
  if (Object.keys(f).length === 0) return 'all';
  const seqs: number[] = [];
  for (const e of selectEntries(store.db, tenant, f)) seqs.push(e.seq);
  return seqs;
}

/** Ascending seqs as inclusive ranges of consecutive ones. */
function toRanges(seqs: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  for (const s of seqs) {
    const last = out[out.length - 1];
    if (last && s === last[1] + 1) last[1] = s;
    else out.push([s, s]);
  }
  return out;
}

/** Merge the checkpoint intervals (bounds[i-1], bounds[i]] that hold a matched seq into segments. */
function segmentsFor(bounds: number[], matched: number[] | 'all'): [number, number][] {
  const head = bounds[bounds.length - 1] ?? 0;
  if (matched === 'all') return head > 0 ? [[1, head]] : [];
  const out: [number, number][] = [];
  let i = 1;
  for (const m of matched) {
    while (i < bounds.length && bounds[i]! < m) i++;
    if (i >= bounds.length) break; // after the last checkpoint: cannot happen, export checkpoints the head first
    const from = bounds[i - 1]! + 1;
    const to = bounds[i]!;
    const last = out[out.length - 1];
    if (last && last[1] >= from - 1) last[1] = Math.max(last[1], to);
    else out.push([from, to]);
  }
  return out;
}

export interface BundleReport {
  readonly ok: boolean;
  readonly tenant: string;
  readonly entries: number;
  readonly segments: [number, number][];
  readonly keyId: string;
  /** Last entry of the last segment, when intact. */
  readonly head: { readonly seq: number; readonly hash: string } | null;
  readonly damage?: Damage;
}

/**
 * Verify a bundle's text offline. The bundle's own public key is used unless `publicKey`
 * pins the site key the auditor got separately (`linekeeper audit key --export`).
 * @throws LkError LK_VALIDATION when the text is not a bundle at all; LK_AUDIT_KEY when the embedded
 *   key is unreadable or is not the pinned key.
 */
export function verifyBundle(text: string, opts: { publicKey?: PublicSiteKey } = {}): BundleReport {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return verifyLines(() => lines, opts).report;
}

/**
 * {@link verifyBundle} of a bundle file, read line by line: a bundle of a million-entry trail is larger than the
 * longest string a JavaScript engine holds (512 MiB), so it is never read whole. Also returns the file's SHA-256
 * and the checkpoints of the bundle that are validly signed for its tenant.
 * @throws LkError as {@link verifyBundle}.
 */
export function verifyBundleFile(file: string, opts: { publicKey?: PublicSiteKey } = {}): { report: BundleReport; sha256: string; checkpoints: SignedCheckpoint[] } {
  // read twice (verifyLines): each reading's digest, and they must agree — the digest handed back is of the bytes verified
  const digests: ReturnType<typeof createHash>[] = [];
  const { report, checkpoints } = verifyLines(() => {
    const digest = createHash('sha256');
    digests.push(digest);
    return fileLines(file, (chunk) => digest.update(chunk));
  }, opts);
  const [first, ...again] = digests.map((d) => d.digest('hex'));
  if (again.some((h) => h !== first)) throw new LkError('LK_AUDIT_BROKEN', 'the bundle file changed while it was being verified', { file });
  return { report, sha256: first!, checkpoints };
}

/**
 * The lines of a file as `text.split('\n')` gives them, without a last empty one after a final newline; read
 * in chunks (a newline byte is never part of a multi-byte UTF-8 character, so lines are cut on bytes). Every
 * chunk read goes to `onChunk`, the whole file in order, once the generator has run to its end.
 */
function* fileLines(file: string, onChunk: (chunk: Buffer) => void): Generator<string> {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let rest = Buffer.alloc(0);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const chunk = buf.subarray(0, n);
      onChunk(chunk);
      const data = rest.length > 0 ? Buffer.concat([rest, chunk]) : chunk;
      let start = 0;
      for (let nl = data.indexOf(10, start); nl >= 0; nl = data.indexOf(10, start)) {
        yield data.toString('utf8', start, nl);
        start = nl + 1;
      }
      rest = Buffer.from(data.subarray(start));
    }
    if (rest.length > 0) yield rest.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** A line's JSON object, or undefined (not JSON, or not an object). */
function objectOf(line: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(line) as unknown;
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a line can be a checkpoint's: its `type` can only read "checkpoint" when the text spells the word or
 * escapes a character (`\u0063…`); no other line needs parsing to tell.
 */
const mayBeCheckpoint = (line: string): boolean => line.includes('checkpoint') || line.includes('\\u');

/**
 * The verification of a bundle's lines, which `lines` gives from the start each time it is called. Two readings:
 * the first takes the header and the checkpoints (wherever their lines are: a checkpoint anchors the entries before
 * its line too); the second hands the entry lines one at a time to the walk (bundle-diagnose.ts), so no reading
 * holds all of a bundle's entries — a million-entry trail's would be ~280 MB of heap. The report is the one a
 * single reading of every line gave: the damages of the lines merged in line order.
 */
function verifyLines(lines: () => Iterable<string>, opts: { publicKey?: PublicSiteKey }): { report: BundleReport; checkpoints: SignedCheckpoint[] } {
  const reading = lines()[Symbol.iterator]();
  const headLine = reading.next();
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(headLine.done ? '' : headLine.value) as Record<string, unknown>;
  } catch {
    throw new LkError('LK_VALIDATION', 'not a linekeeper audit bundle (first line is not JSON)');
  }
  if (typeof header !== 'object' || header === null || header.type !== 'header' || header.format !== BUNDLE_FORMAT || (header.version !== 1 && header.version !== 2)) {
    throw new LkError('LK_VALIDATION', 'not a linekeeper audit bundle (no header line)');
  }
  const embedded = parsePublicKey(String(header.public_key ?? ''), 'bundle public key');
  const key = opts.publicKey ?? embedded;
  if (embedded.keyId !== key.keyId) throw new LkError('LK_AUDIT_KEY', `bundle was signed by key ${embedded.keyId.slice(0, 16)}…, not the pinned site key ${key.keyId.slice(0, 16)}…`);
  const tenant = String(header.tenant);
  const { sig, ...unsigned } = header;
  const segments = asSegments(header.segments);
  if (!segments) return { report: { ok: false, tenant, entries: 0, segments: [], keyId: key.keyId, head: null, damage: { kind: 'malformed', seq: null, detail: 'header segments are malformed' } }, checkpoints: [] };
  // version 2 signs which entries the filter chose; version 1 left the flags uncovered
  const selected = header.version === 2 ? asSegments(header.selected) : undefined;
  if (header.version === 2 && !selected) return { report: { ok: false, tenant, entries: 0, segments, keyId: key.keyId, head: null, damage: { kind: 'malformed', seq: null, detail: 'header selected ranges are malformed' } }, checkpoints: [] };

  const cps: SignedCheckpoint[] = [];
  /** The lines' damages with their line index, merged in line order at the end. */
  const damages: [number, Damage][] = [];
  const headDamages: Damage[] = [];
  const headerBytes = tryCanonical(unsigned);
  if (header.key_id !== key.keyId || headerBytes === undefined || !verifyBytes(key, headerBytes, sig)) headDamages.push({ kind: 'signature_invalid', seq: null, detail: 'bundle header signature is invalid' });
  // first reading: the checkpoints
  let i = 0;
  for (const line of { [Symbol.iterator]: () => reading }) {
    i++;
    if (!mayBeCheckpoint(line)) continue;
    const o = objectOf(line);
    if (o?.type !== 'checkpoint') continue;
    const c = asCheckpoint({ ...o, type: undefined });
    if (c && c.tenant === tenant && checkpointSignatureValid(key, c)) cps.push(c);
    else damages.push([i, { kind: 'signature_invalid', seq: typeof o.seq === 'number' ? o.seq : null, detail: `checkpoint on line ${i + 1} is not validly signed for this tenant` }]);
  }
  // second reading: the entry lines, one at a time through the walk, then the rest of them counted and checked
  let entries = 0;
  function* entryLines(): Generator<BundleItem> {
    const again = lines()[Symbol.iterator]();
    again.next();
    let j = 0;
    for (const line of { [Symbol.iterator]: () => again }) {
      j++;
      const o = objectOf(line);
      if (o?.type === 'checkpoint') continue;
      if (o?.type === 'entry' && typeof o.entry === 'object' && o.entry !== null) {
        const entry = o.entry as Record<string, unknown>;
        const body = tryCanonical(entry);
        const hashOk = body !== undefined && hash('sha256', body) === o.hash;
        if (selected && typeof entry.seq === 'number' && o.in_filter !== inRanges(selected, entry.seq)) {
          damages.push([j, { kind: 'edited', seq: entry.seq, detail: `the in_filter flag of entry ${entry.seq} does not match the signed header` }]);
        }
        entries++;
        yield { seq: entry.seq, prev: entry.prev_hash, hash: o.hash, tenant: entry.tenant, hashOk };
      } else if (entries === 0) {
        headDamages.push({ kind: 'malformed', seq: null, detail: `line ${j + 1} is not a checkpoint or entry` });
      } else {
        entries++;
        yield null;
      }
    }
  }
  const items = entryLines();
  const walk = diagnoseBundle(items, segments, cps, tenant, GENESIS_HASH);
  for (const _ of items) {
    // the lines after the walk's last: counted, their flags checked
  }
  const all = [...(walk.damage ? [walk.damage] : []), ...damages.sort((a, b) => a[0] - b[0]).map(([, d]) => d), ...headDamages];
  const first = firstDamage(all);
  const base = { ok: first === undefined, tenant, entries, segments, keyId: key.keyId, head: first ? null : walk.head };
  return { report: first ? { ...base, damage: first } : base, checkpoints: cps };
}

function inRanges(ranges: readonly [number, number][], seq: number): boolean {
  return ranges.some(([a, b]) => seq >= a && seq <= b);
}

function asSegments(v: unknown): [number, number][] | undefined {
  if (!Array.isArray(v)) return undefined;
  let prev = 0;
  for (const s of v) {
    if (!Array.isArray(s) || s.length !== 2 || !s.every((n) => Number.isSafeInteger(n)) || !(s[0] > prev && s[1] >= s[0])) return undefined;
    prev = s[1] as number;
  }
  return v as [number, number][];
}


/** Canonical JSON, or undefined for what has none (a lone surrogate from a doctored line): damage, not a crash. */
function tryCanonical(v: unknown): string | undefined {
  try {
    return canonicalJson(v);
  } catch {
    return undefined;
  }
}
