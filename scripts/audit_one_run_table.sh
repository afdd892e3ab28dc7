#!/usr/bin/env bash
# The one-run audit's table (paper_refs/audit_one_run.md), one command from the repository root:
#   bash scripts/audit_one_run_table.sh
# Three train configs at epsilon 1, 2, 4, 8: the synthetic full-batch config (q = 1), the README
# recipe's config (`clipnorm recommend --feature-ranges` on breast_cancer, the DP-SGD part of its
# budget, audited without its ledger) and the
# clip-norm study's digits setting; m = 100, 1000 and 10000 canaries over seeds 1-20; the
# multi-run audit at the same (q, T, z) where affordable. Each
# finished run appends one JSON line to the results file, so a rerun skips what is done.
set -euo pipefail
BIN=${BIN:-target/release/dpsgd-lab}
OUT=${OUT:-paper_refs/audit_one_run.jsonl}
WORK=target/audit_one_run
mkdir -p "$WORK"
touch "$OUT"
for e in 1 2 4 8; do
  sed "s/epsilon = 2.0/epsilon = $e.0/" simulations/audit/one_run_q1.toml > "$WORK/synthetic_q1_eps$e.toml"
  sed "s/epsilon = 2.0/epsilon = $e.0/" simulations/audit/digits.toml > "$WORK/digits_eps$e.toml"
  # The README's recipe command (public feature ranges), with a ledger of its own so that no
  # ledger of the repository's data is touched.
  if [ ! -f "$WORK/recipe_eps$e.toml" ]; then
    rm -f "$WORK/recipe_eps$e.ledger.jsonl"
    "$BIN" clipnorm recommend --csv data/breast_cancer.csv --label target --epsilon $e \
      --feature-ranges data/breast_cancer.ranges.csv --test-fraction 0.2 --epochs 30 \
      --ledger "$WORK/recipe_eps$e.ledger.jsonl" --write-config "$WORK/recipe_eps$e.written.toml" > /dev/null
    # The audited copy has no [privacy] block: the table runs hundreds of audits of the same
    # config (each a DP-SGD release of the rows), which no ledger's budget holds; it measures the
    # recipe's mechanism, it releases no model.
    sed -e '/^# One budget for the data/d' -e '/^\[privacy\]/,/^$/d' "$WORK/recipe_eps$e.written.toml" \
      > "$WORK/recipe_eps$e.toml"
  fi
done
for m in 100 1000 10000; do
  seeds=20
  for cfg in synthetic_q1 recipe digits; do
    for e in 1 2 4 8; do
      for s in $(seq 1 $seeds); do
        key="\"config\":\"$cfg\",\"eps\":$e,\"m\":$m,\"seed\":$s,"
        grep -qF "$key" "$OUT" && continue
        line=$("$BIN" audit-run --config "$WORK/${cfg}_eps$e.toml" --canaries $m --seed $s --json | tail -1)
        echo "{$key\"report\":$line}" >> "$OUT"
      done
    done
  done
done
# The multi-run audit (10^4 trials per side, seed 1) at each config's (q, T, z, delta).
for cfg in synthetic_q1 recipe digits; do
  for e in 1 2 4 8; do
    key="\"multi\":\"$cfg\",\"eps\":$e,"
    grep -qF "$key" "$OUT" && continue
    rep=$(grep -F "\"config\":\"$cfg\",\"eps\":$e,\"m\":100,\"seed\":1," "$OUT" | head -1)
    read -r q T z d < <(python3 -c "import json,sys; r=json.loads(sys.argv[1])['report']; print(r['sample_rate'], r['steps'], repr(r['noise_multiplier']), r['delta'])" "$rep")
    line=$("$BIN" audit --q "$q" --steps "$T" --z "$z" --delta "$d" --trials 10000 --seed 1 --json | tail -1)
    echo "{$key\"report\":$line}" >> "$OUT"
  done
done
python3 scripts/audit_one_run_table.py "$OUT" > paper_refs/audit_one_run.md
