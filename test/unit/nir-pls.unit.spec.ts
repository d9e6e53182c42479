import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/clock.js';
import { evidenceChain, spectrumSha256, verifyEvidenceChain } from '../../src/twin/nir/evidence.js';
import { nirScore, trainPls, type NirModel } from '../../src/twin/nir/pls.js';
import { nirSample, nirSamples, snv, WL_COUNT } from '../../src/twin/nir/spectra.js';

const rng = createRng(77);
const cal = nirSamples(100, rng);
const test = nirSamples(40, rng, 85, 115);
const trained = trainPls(cal, test, { tenant: 'acme-pharma', seed: 77 });
const model: NirModel = { id: 'potency-pls-v1', version: 1, artefact: trained.artefact };

describe('NIR potency PLS (SNV + ml-pls)', () => {
  it('chooses 3–6 latent variables by cross-validation and predicts an independent set within 1.5 % LC', () => {
    expect(trained.artefact.latentVariables).toBeGreaterThanOrEqual(3);
    expect(trained.artefact.latentVariables).toBeLessThanOrEqual(6);
    expect(trained.artefact.rmsep).toBeLessThan(1.5);
    expect(trained.rmsecvByLv[0]!).toBeGreaterThan(3 * trained.artefact.rmsecv); // one LV cannot separate the API from scatter and water
    expect(trained.card.metrics).toMatchObject({ latentVariables: trained.artefact.latentVariables, rmsep: trained.artefact.rmsep });
    expect(trained.card.metrics['rmsec']).toBeGreaterThan(0);
  });

  it('scores fresh spectra with a 95 % interval that covers the truth about 95 % of the time', () => {
    const fresh = nirSamples(200, createRng(78), 85, 115);
    let covered = 0;
    for (const s of fresh) {
      const r = nirScore(model, s.spectrum);
      expect(r.modelId).toBe('potency-pls-v1');
      if (s.potencyPct >= r.ci95[0] && s.potencyPct <= r.ci95[1]) covered++;
    }
    expect(covered / fresh.length).toBeGreaterThan(0.88);
    expect(covered / fresh.length).toBeLessThan(1); // an interval that always covers is too wide to be evidence
  });

  it('flags a prediction outside the calibrated range', () => {
    expect(nirScore(model, nirSample(100, createRng(1)).spectrum).outsideCalibration).toBe(false);
    expect(nirScore(model, nirSample(150, createRng(1)).spectrum).outsideCalibration).toBe(true);
  });

  it('refuses malformed spectra', () => {
    expect(() => nirScore(model, new Float64Array(10))).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
    const bad = Float64Array.from(nirSample(100, createRng(2)).spectrum);
    bad[5] = Number.NaN;
    expect(() => nirScore(model, bad)).toThrow(expect.objectContaining({ code: 'LK_VALUE_INVALID' }));
    expect(() => nirScore(model, new Float64Array(WL_COUNT).fill(1))).toThrow(expect.objectContaining({ code: 'LK_VALUE_INVALID' }));
  });

  it('SNV removes multiplicative scatter and offset', () => {
    const s = nirSample(100, createRng(3)).spectrum;
    const scaled = s.map((v) => 1.3 * v + 0.2);
    const a = snv(s);
    const b = snv(scaled);
    for (let i = 0; i < a.length; i++) expect(b[i]).toBeCloseTo(a[i]!, 9);
  });
});

describe('NIR evidence chain', () => {
  const scans = nirSamples(5, createRng(9), 95, 105);
  const t0 = Date.UTC(2026, 0, 1);
  const items = scans.map((s, i) => ({ spectrum: s.spectrum, score: nirScore(model, s.spectrum), at: t0 + i * 30_000 }));
  const chain = evidenceChain(items, { modelSha256: 'a'.repeat(64) });

  it('links each prediction to its spectrum hash, model version and time', () => {
    expect(chain).toHaveLength(5);
    chain.forEach((e, i) => {
      expect(e.spectrumSha256).toBe(spectrumSha256(scans[i]!.spectrum));
      expect(e.modelVersion).toBe(1);
      expect(e.at).toBe(new Date(t0 + i * 30_000).toISOString());
      expect(e.prevHash).toBe(i === 0 ? '0'.repeat(64) : chain[i - 1]!.hash);
    });
    expect(verifyEvidenceChain(chain, scans.map((s) => s.spectrum))).toBe(-1);
  });

  it('finds an altered prediction, a swapped spectrum and a dropped entry', () => {
    const edited = chain.map((e) => ({ ...e }));
    edited[2]!.prediction += 0.5;
    expect(verifyEvidenceChain(edited)).toBe(2);
    const swapped = scans.map((s) => s.spectrum);
    swapped[3] = scans[4]!.spectrum;
    expect(verifyEvidenceChain(chain, swapped)).toBe(3);
    expect(verifyEvidenceChain([chain[0]!, ...chain.slice(2)])).toBe(1);
    expect(spectrumSha256(scans[0]!.spectrum)).not.toBe(spectrumSha256(scans[1]!.spectrum));
  });

  it('refuses time going backwards', () => {
    expect(() => evidenceChain([items[1]!, items[0]!])).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
  });
});
