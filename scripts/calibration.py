#!/usr/bin/env python3
"""Whether `harness run`'s intervals hold the next run's answer (docs/statistics.md, "Calibration").

Runs CONFIG as RUNS independent `harness run`s, one after another, each of several rounds, and
counts, over every ordered pair of runs (i, j) and every backend, how often run i's 95% interval
against the baseline holds run j's ratio, as `harness report RUN.csv --baseline B` prints both. A
calibrated interval holds another estimate of equal spread about 83% of the time
(P(|Z| < 1.96 / sqrt 2)). For comparison, the same count for one round alone: each run's first
round, with the one-round bootstrap over its steps; and the estimator before the rounds model
(each backend paired with the baseline alone: Student's t over the rounds' log ratios of medians,
R - 1 degrees of freedom), computed here from the same CSVs. Each with the median half-width of
its intervals, as a share of the ratio.

  scripts/calibration.py OUT_DIR [--runs 6] [--config configs/hourglass2.yaml]
      [--backends onednn,libtorch-cpu,...] [--baseline libtorch-cpu] [-- RUN_ARGS...]

RUN_ARGS are handed to every `harness run` (default: --rounds 3 --warmup 2 --iterations 2, the
main job's plan of rounds and steps, configs/hourglass8.yaml). Runs already in OUT_DIR (run-K.csv with its sidecar) are reused, so an
interrupted calibration goes on where it stopped. Writes OUT_DIR/calibration.md and prints it.
"""

import argparse
import csv
import itertools
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BACKENDS = ("onednn,libtorch-cpu,onednn-debian,libtorch-cpu-debian,tensorflow,"
                    "tensorflow-onednn")
DEFAULT_RUN_ARGS = ["--rounds", "3", "--warmup", "2", "--iterations", "2"]
CALIBRATED = math.erf(1.959963985 / math.sqrt(2) / math.sqrt(2))
RATIO = re.compile(r"([0-9.]+)x \[([0-9.]+), ([0-9.]+)\]")


def harness(build, *args):
    return subprocess.run([os.path.join(build, "harness"), *args], check=True,
                          capture_output=True, text=True).stdout


def over_rounds(report, config):
    """Backend -> (ratio, lo, hi) from the report's table over every round given."""
    found = {}
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0] == config:
            m = RATIO.fullmatch(cells[3])
            if m:
                found[cells[1]] = tuple(float(x) for x in m.groups())
    return found


def one_round(report, baseline):
    """Backend -> (ratio, lo, hi) from the report's main table, a file of one round."""
    found, header = {}, None
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None and "backend" in cells and f"vs {baseline}" in cells:
            header = cells
            continue
        if header and len(cells) == len(header):
            m = RATIO.match(cells[header.index(f"vs {baseline}")])
            if m:
                found[cells[header.index("backend")]] = tuple(float(x) for x in m.groups())
    return found


# t(0.975, df): the paired estimator's quantiles for the few rounds a calibration runs.
T975 = {1: 12.7062, 2: 4.3027, 3: 3.1824, 4: 2.7764, 5: 2.5706, 6: 2.4469, 7: 2.3646, 8: 2.3060,
        9: 2.2622, 10: 2.2281}


def paired_over_rounds(csv_path, baseline):
    """Backend -> (ratio, lo, hi): Student's t over the rounds' log ratios of medians, each
    backend paired with the baseline alone (the estimator before the rounds model)."""
    with open(csv_path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "ok" and r["median_ms"]]
    medians = {}
    for r in rows:
        medians.setdefault(r["backend"], {})[r["round"]] = float(r["median_ms"])
    found = {}
    for backend, rounds in medians.items():
        if backend == baseline:
            continue
        logs = [math.log(ms / medians[baseline][k]) for k, ms in rounds.items()
                if k in medians.get(baseline, {})]
        if len(logs) < 2 or len(logs) - 1 not in T975:
            continue
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        half = T975[len(logs) - 1] * sd / math.sqrt(len(logs))
        found[backend] = (math.exp(mean), math.exp(mean - half), math.exp(mean + half))
    return found


def median_half_width(estimates, backend):
    """The median over runs of the interval's half-width, as a share of the ratio."""
    widths = sorted(max(hi / ratio - 1, 1 - lo / ratio)
                    for e in estimates if (x := e.get(backend)) for ratio, lo, hi in [x])
    if not widths:
        return float("nan")
    mid = len(widths) // 2
    return widths[mid] if len(widths) % 2 else (widths[mid - 1] + widths[mid]) / 2


def first_round_copy(csv_path, out_path):
    """The run's first round alone, as a CSV and sidecar of one round."""
    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f))
    round_column = rows[0].index("round")
    kept = [rows[0]] + [r for r in rows[1:] if r[round_column] == "1"]
    with open(out_path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(kept)
    with open(csv_path[:-4] + ".json") as f:
        sidecar = json.load(f)
    sidecar["runs"] = [r for r in sidecar["runs"] if r.get("round", 1) == 1]
    with open(out_path[:-4] + ".json", "w") as f:
        json.dump(sidecar, f)


def coverage(estimates):
    """Per backend: (pairs, inside) over ordered pairs of runs (i's interval, j's ratio)."""
    counts = {}
    for a, b in itertools.permutations(estimates, 2):
        for backend, (_, lo, hi) in a.items():
            if backend not in b:
                continue
            pairs, inside = counts.get(backend, (0, 0))
            counts[backend] = (pairs + 1, inside + (lo <= b[backend][0] <= hi))
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--config", default="configs/hourglass2.yaml")
    parser.add_argument("--backends", default=DEFAULT_BACKENDS)
    parser.add_argument("--baseline", default="libtorch-cpu")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("run_args", nargs="*")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs: at least 2, to compare one run with another")
    run_args = args.run_args or DEFAULT_RUN_ARGS
    os.makedirs(args.out_dir, exist_ok=True)

    several, single, paired = [], [], []
    config_name = None
    for k in range(1, args.runs + 1):
        run_csv = os.path.join(args.out_dir, f"run-{k}.csv")
        if not os.path.exists(run_csv):
            print(f"calibration: run {k}/{args.runs}", file=sys.stderr, flush=True)
            harness(args.build, "run", args.config, "--backends", args.backends, "--baseline",
                    args.baseline, "--quiet", "--output", run_csv, *run_args)
        with open(run_csv, newline="") as f:
            config_name = next(csv.DictReader(f))["config_name"]
        several.append(over_rounds(harness(args.build, "report", run_csv, "--baseline",
                                           args.baseline), config_name))
        paired.append(paired_over_rounds(run_csv, args.baseline))
        first = os.path.join(args.out_dir, f"run-{k}-round1.csv")
        first_round_copy(run_csv, first)
        single.append(one_round(harness(args.build, "report", first, "--baseline",
                                        args.baseline), args.baseline))

    lines = [f"# Calibration of `harness run {args.config}`", "",
             f"{args.runs} runs, one after another, each `harness run {args.config} --backends "
             f"{args.backends} {' '.join(run_args)}`; the share of ordered pairs of runs (i, j) "
             f"in which run i's 95% interval against `{args.baseline}` holds run j's ratio. "
             f"A calibrated interval: {100 * CALIBRATED:.0f}%.", "",
             "| backend | pairs | over the rounds | half-width | paired over the rounds "
             "(before the rounds model) | half-width | one round (each run's first) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    counts = [coverage(several), coverage(paired), coverage(single)]
    totals = [[0, 0] for _ in counts]

    def share(inside, pairs):
        return f"{inside} ({100 * inside / max(pairs, 1):.0f}%)"

    for backend in sorted(counts[0]):
        cells = []
        for n, (c, estimates) in enumerate(zip(counts, (several, paired, single))):
            pairs, inside = c.get(backend, (0, 0))
            totals[n] = [totals[n][0] + pairs, totals[n][1] + inside]
            cells.append(share(inside, pairs))
            if n < 2:
                cells.append(f"{100 * median_half_width(estimates, backend):.1f}%")
        lines.append(f"| {backend} | {counts[0][backend][0]} | " + " | ".join(cells) + " |")
    all_widths = []
    for estimates in (several, paired):
        widths = sorted(max(hi / r - 1, 1 - lo / r) for e in estimates for r, lo, hi in e.values())
        all_widths.append(f"{100 * widths[len(widths) // 2]:.1f}%" if widths else "-")
    lines.append(f"| all | {totals[0][0]} | {share(totals[0][1], totals[0][0])} | {all_widths[0]} "
                 f"| {share(totals[1][1], totals[1][0])} | {all_widths[1]} "
                 f"| {share(totals[2][1], totals[2][0])} |")
    rounds_counts = counts[0]
    lines += ["", "Each run's ratio over its rounds [95% interval]:", "",
              "| run | " + " | ".join(sorted(rounds_counts)) + " |",
              "|---|" + "---:|" * len(rounds_counts)]
    for k, estimates in enumerate(several, 1):
        cells = [f"{e[0]:.3f} [{e[1]:.3f}, {e[2]:.3f}]" if (e := estimates.get(b)) else "-"
                 for b in sorted(rounds_counts)]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out_dir, "calibration.md"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
