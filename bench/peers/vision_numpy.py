"""The vision benchmark's peer: the same features as src/twin/vision/classifier.ts
(4x4 block means, silhouette area, enclosed holes, dark and bright specks, crack
rows, texture, shading gradient, aggregated over faces and sides) and the same
softmax, written the way a vision engineer would: vectorised numpy.

stdin: JSON {"file", "sets", "width", "height", "model", "rounds"}; the file holds
`sets` frame sets of 6 frames, 8-bit grey, row-major, back to back.
stdout: JSON {"features": [[...] per set], "labels": [...], "ms": [per call]}.
"""
import json
import sys
import time

import numpy as np

T = 90.0
B = 4
FACE_R = 180
BAND_W, BAND_H = 360, 120


def image_features(img, face, w, h):
    c = img.reshape(h // B, B, w // B, B).mean(axis=(1, 3), dtype=np.float64)
    bh, bw = c.shape
    on = c >= T
    n = int(on.sum())
    ys, xs = np.nonzero(on)
    mean = float(c[on].mean()) if n else 0.0
    cx = float(xs.mean()) if n else bw / 2
    cy = float(ys.mean()) if n else bh / 2
    # judged where the cells two away on all four sides are on the tablet
    ring = np.zeros_like(on)
    ring[2:-2, 2:-2] = on[2:-2, :-4] & on[2:-2, 4:] & on[:-4, 2:-2] & on[4:, 2:-2]
    holes = int((ring & ~on).sum())
    good = ring & on
    v = c[good]
    dark = int((v < mean - 30).sum())
    bright = int((v > mean + 45).sum())
    right = np.zeros_like(c)
    right[:, :-1] = c[:, 1:]
    down = np.zeros_like(c)
    down[:-1, :] = c[1:, :]
    tex_n = int(good.sum())
    tex = float((np.abs(c - right) + np.abs(c - down))[good].sum())
    gy_idx, gx_idx = np.nonzero(good)
    gx = float(((v - mean) * (gx_idx - cx)).sum())
    gy = float(((v - mean) * (gy_idx - cy)).sum())
    crack = 0.0
    if not face:
        row_sum = np.where(good, c, 0.0).sum(axis=1)
        row_n = good.sum(axis=1).astype(np.float64)
        m0 = row_sum.sum() / row_n.sum() if row_n.sum() > 0 else mean
        min_cells = BAND_W / B / 4
        ok = (row_n[1:-1] >= min_cells) & (row_n[:-2] >= min_cells) & (row_n[2:] >= min_cells)
        if ok.any():
            crack = max(0.0, float((m0 - row_sum[1:-1][ok] / row_n[1:-1][ok]).max()))
    area = n / ((np.pi * FACE_R * FACE_R) / (B * B) if face else (BAND_W * BAND_H) / (B * B))
    return dict(area=area, holes=holes, dark=dark, bright=bright, crack=crack,
                texture=tex / tex_n if tex_n else 0.0, gradient=float(np.hypot(gx, gy)) / tex_n if tex_n else 0.0)


def set_features(frames, w, h):
    f = [image_features(frames[i], i < 2, w, h) for i in range(6)]
    faces, sides = f[:2], f[2:]
    side_areas = sorted(s['area'] for s in sides)
    return np.array([
        min(x['area'] for x in faces), max(x['area'] for x in faces),
        min(x['area'] for x in sides), sum(x['area'] for x in sides) / 4,
        max(x['holes'] for x in f), sum(x['holes'] for x in f),
        max(x['dark'] for x in faces), max(x['dark'] for x in sides),
        max(x['bright'] for x in f),
        max(x['crack'] for x in sides), sum(x['crack'] for x in sides) / 4,
        sum(x['texture'] for x in f) / 6, max(x['texture'] for x in f),
        sum(x['gradient'] for x in f) / 6,
        max(x['area'] for x in faces) - min(x['area'] for x in faces),
        side_areas[1],
    ])


def classify(model, x):
    z = (x - model['mean']) / model['sd']
    s = model['W'] @ np.append(z, 1.0)
    p = np.exp(s - s.max())
    p /= p.sum()
    return int(p.argmax())


def main():
    req = json.load(sys.stdin)
    w, h, n = req['width'], req['height'], req['sets']
    raw = np.fromfile(req['file'], dtype=np.uint8).reshape(n, 6, h * w)
    m = req['model']
    k = len(m['classes'])
    model = dict(mean=np.array(m['mean']), sd=np.array(m['sd']), W=np.array(m['weights']).reshape(k, -1))
    feats, labels = [], []
    for i in range(n):
        x = set_features(raw[i], w, h)
        feats.append(x.tolist())
        labels.append(m['classes'][classify(model, x)])
    ms = []
    for r in range(req['rounds']):
        for i in range(n):
            t0 = time.perf_counter()
            classify(model, set_features(raw[i], w, h))
            ms.append((time.perf_counter() - t0) * 1000)
    json.dump(dict(features=feats, labels=labels, ms=ms, numpy=np.__version__), sys.stdout)


main()
