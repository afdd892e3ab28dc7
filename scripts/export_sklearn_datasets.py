#!/usr/bin/env python3
"""One-off export of the small UCI datasets that scikit-learn ships inside its package.

Not run at run time: its outputs are committed under data/. Re-running it with the same
scikit-learn version reproduces the files byte for byte (the sha256 sums are in data/README.md).

    pip install scikit-learn
    python3 scripts/export_sklearn_datasets.py        # writes data/{digits,breast_cancer,wine}.csv

Format: a header row with the feature names and a final `target` column holding the class index
0..m-1; one sample per line; integer-valued numbers written without a decimal point, the others
with Python's shortest round-trip repr, so the values are exactly those in scikit-learn's copies.
"""

import csv
import hashlib
import pathlib

import sklearn
from sklearn import datasets

OUT = pathlib.Path(__file__).resolve().parent.parent / "data"

LOADERS = {
    "digits": datasets.load_digits,
    "breast_cancer": datasets.load_breast_cancer,
    "wine": datasets.load_wine,
}


def fmt(v):
    v = float(v)
    return str(int(v)) if v.is_integer() else repr(v)


def main():
    OUT.mkdir(exist_ok=True)
    print(f"scikit-learn {sklearn.__version__}")
    for name, load in LOADERS.items():
        bunch = load()
        x, y = bunch.data, bunch.target
        names = [str(f) for f in bunch.feature_names]
        assert "target" not in names
        path = OUT / f"{name}.csv"
        with open(path, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(names + ["target"])
            for row, label in zip(x, y):
                w.writerow([fmt(v) for v in row] + [str(int(label))])
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        print(f"{path.name}: {x.shape[0]} x {x.shape[1]}, {len(set(y.tolist()))} classes, sha256 {digest}")


if __name__ == "__main__":
    main()
