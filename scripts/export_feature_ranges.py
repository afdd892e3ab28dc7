#!/usr/bin/env python3
"""One-off export of the PUBLIC per-feature ranges of the shipped data sets.

The ranges come from the data sets' published descriptions, never from the CSV values: the
"Summary Statistics" Min/Max table of scikit-learn's `descr/breast_cancer.rst` and
`descr/wine_data.rst`, and "integer pixels in the range 0..16" of `descr/digits.rst`. A range
published in a data set's documentation does not depend on any one row, so using it costs no
privacy (a range computed from the CSV would). Its outputs are committed under data/.

    pip install scikit-learn==1.9.1
    python3 scripts/export_feature_ranges.py   # writes data/{digits,breast_cancer,wine}.ranges.csv

Format: a header `feature,min,max`, then one line per feature in the CSV's column order.
The documented values are rounded (breast_cancer's smallest "mean smoothness" is 0.05263 against a
documented 0.053), so `clipnorm recommend` clamps every value into its range before scaling.
"""

import csv
import pathlib
import re

import sklearn
from sklearn import datasets

OUT = pathlib.Path(__file__).resolve().parent.parent / "data"
DESCR = pathlib.Path(sklearn.__file__).parent / "datasets" / "descr"


def table_ranges(rst):
    """(min, max) of each row of the first 'Summary Statistics' table, in order."""
    text = (DESCR / rst).read_text()
    block = text.split(":Summary Statistics:")[1]
    rows = []
    for line in block.splitlines():
        m = re.match(r"^\s*([^:=]+):\s+([-0-9.]+)\s+([-0-9.]+)", line)
        if m:
            rows.append((m.group(1).strip(), m.group(2), m.group(3)))
        elif rows and line.startswith("==="):
            break
    return rows


def main():
    print(f"scikit-learn {sklearn.__version__}")
    for name, load, rst in [
        ("breast_cancer", datasets.load_breast_cancer, "breast_cancer.rst"),
        ("wine", datasets.load_wine, "wine_data.rst"),
    ]:
        names = [str(f) for f in load().feature_names]
        rows = table_ranges(rst)
        assert len(rows) == len(names), (name, len(rows), len(names))
        write(name, [(n, lo, hi) for n, (_, lo, hi) in zip(names, rows)])
    assert "range 0..16" in (DESCR / "digits.rst").read_text()
    write("digits", [(str(f), "0", "16") for f in datasets.load_digits().feature_names])


def write(name, rows):
    path = OUT / f"{name}.ranges.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["feature", "min", "max"])
        w.writerows(rows)
    print(f"{path.name}: {len(rows)} features")


if __name__ == "__main__":
    main()
