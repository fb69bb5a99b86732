#!/usr/bin/env python3
"""Extract the UCI handwritten digits that scikit-learn ships into
data/digits/ (the data set of `ftc demo`, docs/demo.md).

Run once, with scikit-learn installed (any venv; it is not in the oracle's
requirements because nothing else needs it):
    python3 -m venv /tmp/skvenv && /tmp/skvenv/bin/pip install scikit-learn
    /tmp/skvenv/bin/python tools/oracle/extract_digits.py

Writes (deterministic; no randomness, no timestamps):
  data/digits/images.npy  uint8[1797, 64]  pixel intensities 0..16, row-major 8x8
  data/digits/labels.npy  uint8[1797]      the digit 0..9
The train/test split is not stored: it is a rule (digits_split below, and
ftc demo's copy of it in tools/ftc_demo_data.c).
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_digits


def digits_split(labels):
    """The fixed stratified split: within each class, in data-set order,
    every fifth sample (the 5th, 10th, ...) is a test sample."""
    seen = np.zeros(10, dtype=np.int64)
    test = np.zeros(len(labels), dtype=bool)
    for i, c in enumerate(labels):
        test[i] = seen[c] % 5 == 4
        seen[c] += 1
    return test


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = os.path.join(root, "data", "digits")
    os.makedirs(out, exist_ok=True)
    d = load_digits()
    x = d.data
    assert x.shape == (1797, 64) and x.min() == 0 and x.max() == 16
    assert np.all(x == np.round(x))
    images = x.astype(np.uint8)
    labels = d.target.astype(np.uint8)
    np.save(os.path.join(out, "images.npy"), images)
    np.save(os.path.join(out, "labels.npy"), labels)
    test = digits_split(labels)
    print(f"images {images.shape} labels {labels.shape}; "
          f"train {int((~test).sum())} test {int(test.sum())}; "
          f"per class {np.bincount(labels).tolist()}", file=sys.stderr)


if __name__ == "__main__":
    main()
