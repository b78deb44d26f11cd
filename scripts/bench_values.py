#!/usr/bin/env python3
"""numpy baseline for `tensorpeek bench-values`: the same stats over the same synthetic
BF16 tensor (128256 x 3072 = 788 MB), streamed in 8 MiB chunks from a 16 MiB in-memory
buffer like the native bench: count, min, max, mean/std (f64, per-chunk two-pass merged
with Chan's formula), NaN/±Inf/zero/subnormal counts, a 256-bin histogram and SHA-256 of
the raw bytes. Needs numpy and ml_dtypes (numpy has no bfloat16; the BF16 -> f32
conversion itself is done by shifting the bits, the fastest numpy way). Pass "on" or
"off" to run only the SHA-256 on/off variant."""

import hashlib
import sys
import time

import ml_dtypes
import numpy as np

ELEMENTS = 128256 * 3072
CHUNK = 8 * 1024 * 1024
BUF = 16 * 1024 * 1024
TINY = float(ml_dtypes.finfo(ml_dtypes.bfloat16).smallest_normal)

rng = np.random.default_rng(1)
buf = (rng.standard_normal(BUF // 2) * 0.02).astype(ml_dtypes.bfloat16).view(np.uint8)
total = ELEMENTS * 2


def run(sha):
    h = hashlib.sha256() if sha else None
    n_tot, mean, m2 = 0, 0.0, 0.0
    mn, mx = np.inf, -np.inf
    nan = pinf = ninf = zeros = subs = 0
    hist = None
    edges = None
    done = 0
    t0 = time.perf_counter()
    while done < total:
        for off in range(0, BUF, CHUNK):
            take = min(CHUNK, total - done)
            if take <= 0:
                break
            raw = buf[off : off + take]
            if h:
                h.update(raw)
            # BF16 -> f32 by shifting the bits (much faster than ml_dtypes' cast), then f64.
            x = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
            fin = np.isfinite(x)
            if not fin.all():
                nan += int(np.isnan(x).sum())
                pinf += int((x == np.inf).sum())
                ninf += int((x == -np.inf).sum())
                x = x[fin]
            n = x.size
            if n:
                a = np.abs(x)
                zeros += int((a == 0).sum())
                subs += int(((a > 0) & (a < TINY)).sum())
                bmin, bmax = float(x.min()), float(x.max())
                mn, mx = min(mn, bmin), max(mx, bmax)
                bm = float(x.sum()) / n
                d = x - bm
                bm2 = float(np.dot(d, d))
                if edges is None:
                    edges = (bmin, bmax)
                    hist = np.zeros(256, dtype=np.int64)
                # Equal-width bins by direct index + bincount (faster than np.histogram).
                scale = 256 / ((edges[1] - edges[0]) or 1.0)
                idx = np.clip(((x - edges[0]) * scale).astype(np.int64), 0, 255)
                hist += np.bincount(idx, minlength=256)
                tot = n_tot + n
                delta = bm - mean
                mean += delta * n / tot
                m2 += bm2 + delta * delta * n_tot * n / tot
                n_tot = tot
            done += take
    secs = time.perf_counter() - t0
    print(f"  numpy sha256 {'on ' if sha else 'off'}  {secs:.3f} s  {total / secs / 1e9:.2f} GB/s  "
          f"(count {n_tot + nan + pinf + ninf}, mean {mean:.3e}, std {(m2 / n_tot) ** 0.5:.3e})")
    return secs


print(f"numpy {np.__version__}: BF16, {ELEMENTS} elements, {total} bytes, 8 MiB chunks")
which = sys.argv[1] if len(sys.argv) > 1 else "both"
for sha in (True, False):
    if which == "both" or which == ("on" if sha else "off"):
        run(sha)
