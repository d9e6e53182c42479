import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/clock.js';
import { classifyFrameSet, NearestNeighbour, precisionRecall, trainVision } from '../../src/twin/vision/classifier.js';
import { CAMERAS, DEFECT_CLASSES, frameSets, renderFrameSet } from '../../src/twin/vision/frames.js';

const train = frameSets(80, createRng(31), 1);
const held = frameSets(40, createRng(32), 100_000);
const model = trainVision(train);

describe('six-camera defect classifier', () => {
  it('reaches per-class precision and recall ≥ 0.9 on a held-out set', () => {
    const pred = held.map((s) => classifyFrameSet(model, s).label);
    const pr = precisionRecall(
      held.map((s) => s.label),
      pred,
    );
    for (const c of DEFECT_CLASSES) {
      expect(pr[c].support).toBe(40);
      expect(pr[c].precision, `precision ${c}`).toBeGreaterThanOrEqual(0.9);
      expect(pr[c].recall, `recall ${c}`).toBeGreaterThanOrEqual(0.9);
    }
  });

  it('beats the naive 1-NN on raw pixels', () => {
    const nn = new NearestNeighbour(train);
    const sample = held.slice(0, 70);
    const truth = sample.map((s) => s.label);
    const macro = (pred: string[]): number => {
      const pr = precisionRecall(truth, pred as never);
      return DEFECT_CLASSES.reduce((a, c) => a + pr[c].recall, 0) / DEFECT_CLASSES.length;
    };
    const ours = macro(sample.map((s) => classifyFrameSet(model, s).label));
    const naive = macro(sample.map((s) => nn.classify(s)));
    expect(ours).toBeGreaterThan(naive + 0.1);
  });

  it('keeps frame sets together by trigger id and classifies within the 100 ms budget', () => {
    const s = renderFrameSet('capped', 4242, createRng(1));
    expect(s.frames).toHaveLength(CAMERAS);
    const times: number[] = [];
    let r = classifyFrameSet(model, s);
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      r = classifyFrameSet(model, held[i % held.length]!);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    expect(times[Math.floor(0.99 * times.length)]!).toBeLessThan(100);
    expect(classifyFrameSet(model, s).triggerId).toBe(4242);
    expect(Object.values(r.probabilities).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
  });

  it('trains deterministically and refuses malformed frame sets', () => {
    expect(trainVision(train.slice(0, 140))).toEqual(trainVision(train.slice(0, 140)));
    const s = renderFrameSet('good', 1, createRng(2));
    expect(() => classifyFrameSet(model, { triggerId: 1, frames: s.frames.slice(0, 5) })).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
    expect(() => trainVision(train.filter((x) => x.label !== 'broken'))).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
  });
});
