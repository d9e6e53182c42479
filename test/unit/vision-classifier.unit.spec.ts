import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/clock.js';
import { classifyFeatures, classifyFrameSet, frameSetFeatures, precisionRecall, trainVision, trainVisionOnFeatures } from '../../src/twin/vision/classifier.js';
import { CAMERAS, DEFECT_CLASSES, forEachFrameSet, HEIGHT, PIXELS, renderFrameSet, WIDTH, type DefectClass } from '../../src/twin/vision/frames.js';

// frame sets are 6 × 640×480 (1.8 MB): features are taken as each set is rendered, and the pixels dropped
const featuresOf = (perClass: number, seed: number, first: number): { features: Float64Array; label: DefectClass }[] => {
  const out: { features: Float64Array; label: DefectClass }[] = [];
  forEachFrameSet(perClass, createRng(seed), first, (s) => out.push({ features: frameSetFeatures(s), label: s.label }));
  return out;
};
const train = featuresOf(30, 31, 1);
const held = featuresOf(20, 32, 100_000);
const model = trainVisionOnFeatures(train);

describe('six-camera defect classifier', () => {
  it('[LIM-CAMERAS] renders six 640×480 8-bit frames per trigger, deterministically for the rng state', () => {
    const a = renderFrameSet('capped', 4242, createRng(1));
    expect(a.frames).toHaveLength(CAMERAS);
    expect(a.frames.every((f) => f instanceof Uint8Array && f.length === PIXELS && PIXELS === WIDTH * HEIGHT)).toBe(true);
    expect([WIDTH, HEIGHT]).toEqual([640, 480]);
    const b = renderFrameSet('capped', 4242, createRng(1));
    expect(Buffer.from(b.frames[3]!).equals(Buffer.from(a.frames[3]!))).toBe(true);
    expect(Buffer.from(renderFrameSet('capped', 4242, createRng(2)).frames[3]!).equals(Buffer.from(a.frames[3]!))).toBe(false);
  });

  it('reaches per-class precision and recall ≥ 0.9 on a held-out set (30 per class to train, 20 held out)', () => {
    const pred = held.map((s) => classifyFeatures(model, 0, s.features).label);
    const pr = precisionRecall(
      held.map((s) => s.label),
      pred,
    );
    for (const c of DEFECT_CLASSES) {
      expect(pr[c].support).toBe(20);
      expect(pr[c].precision, `precision ${c}`).toBeGreaterThanOrEqual(0.9);
      expect(pr[c].recall, `recall ${c}`).toBeGreaterThanOrEqual(0.9);
    }
  });

  it('[LIM-CAMERAS] keeps frame sets together by trigger id; probabilities sum to 1', () => {
    const s = renderFrameSet('capped', 4242, createRng(1));
    const r = classifyFrameSet(model, s);
    expect(r.triggerId).toBe(4242);
    expect(r.label).toBe('capped');
    expect(Object.values(r.probabilities).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
  });

  it('trains deterministically, the same from sets as from their features, and refuses malformed frame sets', () => {
    const few: ReturnType<typeof renderFrameSet>[] = [];
    forEachFrameSet(2, createRng(5), 1, (s) => few.push(s));
    const fromSets = trainVision(few);
    expect(fromSets).toEqual(trainVision(few));
    expect(fromSets).toEqual(trainVisionOnFeatures(few.map((s) => ({ features: frameSetFeatures(s), label: s.label }))));
    const s = few[0]!;
    expect(() => classifyFrameSet(model, { triggerId: 1, frames: s.frames.slice(0, 5) })).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
    expect(() => classifyFrameSet(model, { triggerId: 1, frames: s.frames.map((f) => f.subarray(0, 24 * 24)) })).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
    expect(() => trainVisionOnFeatures(train.filter((x) => x.label !== 'broken'))).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
  });
});
