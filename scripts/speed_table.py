"""Regenerates the speed table of docs/performance.md in one sitting: criterion benches of dpsgd-lab, the numpy
reference (scripts/bench_numpy.py) at the same sizes, and the machine's float64 GEMM peak.

Usage (from the repository root, on a quiet machine; about 5 minutes):
  pip install numpy
  python3 scripts/speed_table.py            # runs the benches, then prints the markdown table
  python3 scripts/speed_table.py --no-run   # only reads target/criterion from an earlier run

Reads criterion's `target/criterion/<group>/<bench>/new/estimates.json` (median, nanoseconds).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRIT = os.path.join(ROOT, "target", "criterion")

# (label, bench id under target/criterion, numpy preset, b, flops per step 4 b (d + 1) m)
SIZES = [
    ("a: n 10000, d 10, m 2, b 64", "dpsgd_step_logistic_f64/a_n10000_d10_m2_b64", "a", 64, 4 * 64 * 11 * 2),
    ("b: n 50000, d 512, m 100, b 500", "dpsgd_step_logistic_f64/b_n50000_d512_m100_b500", "b", 500,
     4 * 500 * 513 * 100),
    ("c: n 60000, d 784, m 10, b 500", "dpsgd_step_logistic_f64/c_n60000_d784_m10_b500", "c", 500,
     4 * 500 * 785 * 10),
]
# The GEMM-peak bench (benches/dpsgd_step.rs): one 1024^3 float64 product, 2 n^3 flops.
PEAK_GROUP = "gemm_peak_f64"


def median_ns(bench_id):
    path = os.path.join(CRIT, bench_id, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def peak_gflops():
    """GFLOP/s of one 1024^3 float64 product on one thread (benches/dpsgd_step.rs, gemm_peak_f64);
    the step is single-threaded, so that is the peak it can reach."""
    try:
        return 2.0 * 1024 ** 3 / median_ns(f"{PEAK_GROUP}/dgemm_1024_1thread")
    except OSError:
        return None


def numpy_rate(preset):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench_numpy.py"), "--size", preset],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-run", action="store_true", help="read earlier criterion results only")
    a = ap.parse_args()
    if not a.no_run:
        bench = ["cargo", "bench", "-p", "dpsgd-lab-bench", "--bench", "dpsgd_step"]
        subprocess.run(bench, cwd=ROOT, check=True)
    load = os.getloadavg()[0]
    peak = peak_gflops()
    rows = []
    for label, bench, preset, b, flops in SIZES:
        ns = median_ns(bench)
        ours = 1e9 / ns
        ref = numpy_rate(preset)
        gflops = flops / ns
        frac = f"{gflops:.1f} GFLOP/s" + (f" = {100 * gflops / peak:.0f}% of peak" if peak else "")
        rows.append(f"| {label} | {ns / 1e3:,.2f} µs = {ours:,.0f} steps/s | {ref['steps_per_s']:,.0f} steps/s "
                    f"| **{ours / ref['steps_per_s']:.1f}x** | {frac} |")
    print(f"Measured {datetime.date.today()} on {os.cpu_count()} cores (1-minute load average {load:.2f} "
          f"when the table was assembled), numpy {ref['numpy']} with one BLAS thread. "
          + (f"float64 GEMM peak (matrixmultiply, {PEAK_GROUP}): {peak:.1f} GFLOP/s." if peak else
             "GEMM peak: not measured (no gemm_peak_f64 bench results)."))
    print()
    print("| size | dpsgd-lab (criterion median) | numpy reference | ratio | matrix-product rate |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
