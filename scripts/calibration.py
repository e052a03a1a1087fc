#!/usr/bin/env python3
"""Whether `harness run`'s intervals hold the next run's answer (docs/statistics.md, "Calibration").

Runs CONFIG as RUNS independent `harness run`s, one after another, each of several rounds, and
counts, over every ordered pair of runs (i, j) and every backend, how often run i's 95% interval
against the baseline holds run j's ratio, as `harness report RUN.csv --baseline B` prints both. A
calibrated interval holds another estimate of equal spread about 83% of the time
(P(|Z| < 1.96 / sqrt 2)). For comparison, the same count for one round alone: each run's first
round, with the one-round bootstrap over its steps.

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

    several, single = [], []
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
        first = os.path.join(args.out_dir, f"run-{k}-round1.csv")
        first_round_copy(run_csv, first)
        single.append(one_round(harness(args.build, "report", first, "--baseline",
                                        args.baseline), args.baseline))

    lines = [f"# Calibration of `harness run {args.config}`", "",
             f"{args.runs} runs, one after another, each `harness run {args.config} --backends "
             f"{args.backends} {' '.join(run_args)}`; the share of ordered pairs of runs (i, j) "
             f"in which run i's 95% interval against `{args.baseline}` holds run j's ratio. "
             f"A calibrated interval: {100 * CALIBRATED:.0f}%.", "",
             "| backend | pairs | over the rounds | one round (each run's first) |",
             "|---|---:|---:|---:|"]
    rounds_counts, round1_counts = coverage(several), coverage(single)
    totals = [0, 0, 0, 0]
    for backend in sorted(rounds_counts):
        pairs, inside = rounds_counts[backend]
        pairs1, inside1 = round1_counts.get(backend, (0, 0))
        totals = [totals[0] + pairs, totals[1] + inside, totals[2] + pairs1, totals[3] + inside1]
        lines.append(f"| {backend} | {pairs} | {inside} ({100 * inside / pairs:.0f}%) | "
                     f"{inside1} of {pairs1} ({100 * inside1 / max(pairs1, 1):.0f}%) |")
    lines.append(f"| all | {totals[0]} | {totals[1]} ({100 * totals[1] / max(totals[0], 1):.0f}%) "
                 f"| {totals[3]} of {totals[2]} ({100 * totals[3] / max(totals[2], 1):.0f}%) |")
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
