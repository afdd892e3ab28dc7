#!/usr/bin/env python3
"""Compare two `verify` runs cell by cell (issue verify-3: old estimator against new).

Usage: python3 scripts/compare_verify.py OLD_DIR NEW_DIR

OLD_DIR and NEW_DIR are `verify --out` folders (one sub-folder per spec with results.jsonl).
Cells are matched by (spec, series index, phi index); series the old run does not have (the new
bounded-data controls) are skipped. For each cell, z = (new mean - old mean) / sqrt(se_old^2 +
se_new^2), se = sd / sqrt(R) over the replicates (independent within a cell in both runs). Under
the hypothesis that both estimators are unbiased for the same expected risk, |z| > 1.96 in about
5% of cells and |z| > 3 in about 0.3%. Prints one markdown row per spec and the cells with
|z| > 3.
"""
import json
import math
import os
import sys


def cells(path):
    out = {}
    with open(path) as f:
        for i, line in enumerate(f):
            d = json.loads(line)
            if i == 0 or "replicates" not in d:
                continue
            r = [x["risk"] for x in d["replicates"]]
            m = sum(r) / len(r)
            sd = math.sqrt(sum((v - m) ** 2 for v in r) / max(len(r) - 1, 1))
            out[(d["series"], d["phi_index"])] = (d["phi"], m, sd / math.sqrt(len(r)), len(r))
    return out


def main(old_dir, new_dir):
    print("| spec | cells compared | abs z > 1.96 | abs z > 3 | largest abs z (series, phi, old mean, new mean) |")
    print("|---|---|---|---|---|")
    big = []
    for spec in sorted(os.listdir(new_dir)):
        p_old = os.path.join(old_dir, spec, "results.jsonl")
        p_new = os.path.join(new_dir, spec, "results.jsonl")
        if not (os.path.exists(p_old) and os.path.exists(p_new)):
            continue
        a, b = cells(p_old), cells(p_new)
        zs = []
        for key in sorted(set(a) & set(b)):
            (phi, ma, sa, _), (_, mb, sb, _) = a[key], b[key]
            se = math.hypot(sa, sb)
            z = (mb - ma) / se if se > 0 else 0.0
            zs.append((abs(z), z, key, phi, ma, mb))
            if abs(z) > 3:
                big.append((spec, key, phi, ma, mb, z))
        if not zs:
            continue
        top = max(zs)
        print(
            f"| {spec} | {len(zs)} | {sum(1 for z in zs if z[0] > 1.96)} | "
            f"{sum(1 for z in zs if z[0] > 3)} | {top[1]:+.2f} (series {top[2][0]}, phi {top[3]:.3g}, "
            f"{top[4]:.4g}, {top[5]:.4g}) |"
        )
    if big:
        print("\nCells with |z| > 3:\n")
        for spec, key, phi, ma, mb, z in big:
            print(f"- {spec} series {key[0]} phi {phi:.3g}: old {ma:.4g}, new {mb:.4g}, z = {z:+.2f}")
    slopes(old_dir, new_dir)


def slopes(old_dir, new_dir):
    """The smallest-decade slopes of the series both runs have, from summary.json: old and new
    interval, the ratio of half-widths, and z = (new - old) / sqrt(se_old^2 + se_new^2) with
    se = half-width / 1.96 (the two runs are independent)."""
    print("\n| spec | series | old slope [95% CI] | new slope [95% CI] | half-width new / old | z |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for spec in sorted(os.listdir(new_dir)):
        p_old = os.path.join(old_dir, spec, "summary.json")
        p_new = os.path.join(new_dir, spec, "summary.json")
        if not (os.path.exists(p_old) and os.path.exists(p_new)):
            continue
        old = {x["label"]: x for x in json.load(open(p_old))["series"]}
        for x in json.load(open(p_new))["series"]:
            o = old.get(x["label"])
            if o is None or not o.get("decade") or not x.get("decade"):
                continue
            a, b = o["decade"], x["decade"]
            ha, hb = (a["hi"] - a["lo"]) / 2, (b["hi"] - b["lo"]) / 2
            z = (b["slope"] - a["slope"]) / math.hypot(ha / 1.96, hb / 1.96)
            ratios.append(hb / ha)
            print(
                f"| {spec} | {x['label']} | {a['slope']:.2f} [{a['lo']:.2f}, {a['hi']:.2f}] | "
                f"{b['slope']:.2f} [{b['lo']:.2f}, {b['hi']:.2f}] | {hb / ha:.2f} | {z:+.2f} |"
            )
    if ratios:
        ratios.sort()
        print(f"\nhalf-width new / old: median {ratios[len(ratios) // 2]:.2f}, "
              f"range {ratios[0]:.2f} to {ratios[-1]:.2f} over {len(ratios)} series")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: compare_verify.py OLD_DIR NEW_DIR")
    main(sys.argv[1], sys.argv[2])
