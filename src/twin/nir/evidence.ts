/**
 * `nir.evidence_chain`: each NIR prediction linked to the SHA-256 of the
 * spectrum it came from, the model id and version, and the time it was made,
 * as a hash-linked list so that a release package can show none was dropped,
 * reordered or altered. Pure: the time is an input (hashing has no I/O).
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { LkError } from '../../errors.js';
import type { NirScore } from './score.js';

export interface EvidenceEntry {
  seq: number;
  /** SHA-256 of the spectrum as little-endian IEEE-754 float64 values, hex. */
  spectrumSha256: string;
  modelId: string;
  modelVersion: number;
  /** SHA-256 of the model artefact (from the registry manifest), when known. */
  modelSha256: string | null;
  prediction: number;
  ci95: [number, number];
  outsideCalibration: boolean;
  /** ISO 8601 time of the scan. */
  at: string;
  prevHash: string;
  hash: string;
}

export const GENESIS = '0'.repeat(64);

/** SHA-256 (hex) of a spectrum's float64 little-endian bytes: the same values always hash the same. */
export function spectrumSha256(spectrum: ArrayLike<number>): string {
  const buf = Buffer.alloc(spectrum.length * 8);
  for (let i = 0; i < spectrum.length; i++) buf.writeDoubleLE(spectrum[i]!, i * 8);
  return createHash('sha256').update(buf).digest('hex');
}

function entryHash(e: Omit<EvidenceEntry, 'hash'>): string {
  return createHash('sha256').update(canonicalize(e) ?? '').digest('hex');
}

/**
 * Build the chain for scored spectra. `at` is epoch ms (from the injected
 * clock); `prev` continues an existing chain. Throws LK_VALUE_INVALID for a
 * non-finite time and LK_VALIDATION when times go backwards.
 */
export function evidenceChain(
  items: readonly { spectrum: ArrayLike<number>; score: NirScore; at: number }[],
  opts: { modelSha256?: string; prev?: Pick<EvidenceEntry, 'seq' | 'hash'> } = {},
): EvidenceEntry[] {
  const out: EvidenceEntry[] = [];
  let prevHash = opts.prev?.hash ?? GENESIS;
  let seq = opts.prev ? opts.prev.seq + 1 : 0;
  let lastAt = Number.NEGATIVE_INFINITY;
  for (const it of items) {
    if (!Number.isFinite(it.at)) throw new LkError('LK_VALUE_INVALID', 'evidence time must be finite epoch milliseconds');
    if (it.at < lastAt) throw new LkError('LK_VALIDATION', 'evidence times must not go backwards');
    lastAt = it.at;
    const body: Omit<EvidenceEntry, 'hash'> = {
      seq,
      spectrumSha256: spectrumSha256(it.spectrum),
      modelId: it.score.modelId,
      modelVersion: it.score.modelVersion,
      modelSha256: opts.modelSha256 ?? null,
      prediction: it.score.prediction,
      ci95: it.score.ci95,
      outsideCalibration: it.score.outsideCalibration,
      at: new Date(it.at).toISOString(),
      prevHash,
    };
    const hash = entryHash(body);
    out.push({ ...body, hash });
    prevHash = hash;
    seq++;
  }
  return out;
}

/**
 * Verify a chain: each entry's hash matches its content and links to the one
 * before. Returns the index of the first bad entry, or -1 when all are good.
 * With `spectra`, also checks each spectrum against its recorded hash.
 */
export function verifyEvidenceChain(entries: readonly EvidenceEntry[], spectra?: readonly ArrayLike<number>[], genesis = GENESIS): number {
  let prev = genesis;
  for (let i = 0; i < entries.length; i++) {
    const { hash, ...body } = entries[i]!;
    if (body.prevHash !== prev || entryHash(body) !== hash) return i;
    if (spectra && spectra[i] && spectrumSha256(spectra[i]!) !== body.spectrumSha256) return i;
    prev = hash;
  }
  return -1;
}
