#!/usr/bin/env python3
"""Where the spread of `harness run`'s timings comes from (docs/statistics.md, "Where the spread
comes from"), read from runs' JSON sidecars alone: every timed step of every worker of every round.

  scripts/spread.py RUN.csv [RUN.csv ...] [--baseline NAME]

On the log scale (so each figure is a share of the time, in %):

- step to step: the spread of a worker's timed steps about their own mean, pooled over the
  workers of each backend (what one worker's steps do);
- disturbed steps: steps more than 10% above their worker's fastest, with how much they added;
- worker to worker: the spread of a backend's round figures (each round's lower median) about
  the rounds model's fit (a level per backend and per round), less what its steps alone explain:
  what a fresh worker changes (memory placement, the cores its threads got);
- shared by a round: the spread of the rounds' levels, what a round did to every backend alike
  (a drift over minutes, a busy neighbour), which no ratio keeps;
- for paired steps (rows with a step_sequence), within a round: the spread of the slots' levels
  (each slot being one step of every worker, taken side by side), the drift over a round's
  minutes that pairing leaves out of each round's ratios;
- the ratio's spread: each backend's sd of its rounds' log ratios to the baseline.

Then where a worker's time goes, per backend over its workers (the least and the most, in
seconds): its set-up (the session: graph, state, batches), its warm-up steps, the first of them
alone (a framework's graph optimisation, kernel choice and allocation), its timed steps, and
their sum; what starting a worker costs against what it measures.

With several files, each run is fitted on its own and the figures are pooled over them.
"""

import argparse
import json
import math
import os
import sys


def sidecar_runs(csv_path):
    with open(csv_path[:-4] + ".json") as f:
        return [r for r in json.load(f)["runs"] if r.get("status") == "ok" and r.get("samples_ms")]


def lower_median(xs):
    return sorted(xs)[(len(xs) - 1) // 2]


def fit_two_way(cells, sweeps=200):
    """cells: {(row, col): y}. Additive least squares by alternating means (connected designs).
    Returns (row level, col level, residuals, residual df)."""
    rows = sorted({r for r, _ in cells})
    cols = sorted({c for _, c in cells})
    row_level = {r: 0.0 for r in rows}
    col_level = {c: 0.0 for c in cols}
    for _ in range(sweeps):
        for r in rows:
            ys = [y - col_level[c] for (rr, c), y in cells.items() if rr == r]
            row_level[r] = sum(ys) / len(ys)
        for c in cols:
            ys = [y - row_level[r] for (r, cc), y in cells.items() if cc == c]
            col_level[c] = sum(ys) / len(ys)
    residuals = {k: y - row_level[k[0]] - col_level[k[1]] for k, y in cells.items()}
    return row_level, col_level, residuals, len(cells) - len(rows) - len(cols) + 1


def variance(xs):
    if len(xs) < 2:
        return float("nan")
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def pct(v):
    return "-" if not v == v else f"{100 * math.sqrt(max(v, 0)):.2f}%"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--baseline", default="libtorch-cpu")
    args = parser.parse_args()

    backends = []
    step_sq, step_df = {}, {}        # backend -> pooled within-worker squares and df
    disturbed, steps_seen = {}, {}   # backend -> [added shares], count of steps
    own_sq, own_df, own_n = {}, {}, {}  # backend -> residual squares, df share, steps a figure
    round_levels, slot_levels = [], []
    ratios = {}                       # backend -> [per-run lists of round log ratios]
    all_rows = []
    for path in args.runs:
        runs = sidecar_runs(path)
        all_rows.extend(runs)
        cells, figures = {}, {}
        for r in runs:
            b, k = r["backend"], r.get("round", 1)
            if b not in backends:
                backends.append(b)
            logs = [math.log(x) for x in r["samples_ms"] if x > 0]
            m = sum(logs) / len(logs)
            step_sq[b] = step_sq.get(b, 0) + sum((x - m) ** 2 for x in logs)
            step_df[b] = step_df.get(b, 0) + len(logs) - 1
            fastest = min(r["samples_ms"])
            steps_seen[b] = steps_seen.get(b, 0) + len(logs)
            disturbed.setdefault(b, []).extend(
                x / fastest - 1 for x in r["samples_ms"] if x > 1.1 * fastest)
            cells[(b, k)] = math.log(lower_median(r["samples_ms"]))
            figures[(b, k)] = r
            own_n[b] = len(logs)
        if len(cells) < 3:
            continue
        _, levels, residuals, df = fit_two_way(cells)
        if df > 0:
            per_backend = {}
            for (b, _), e in residuals.items():
                per_backend.setdefault(b, []).append(e)
            count = len({b for b, _ in cells})
            for b, es in per_backend.items():
                # A backend's share of the residual degrees of freedom, balanced: (R_b - 1)(B - 1)/B.
                share = (len(es) - 1) * (count - 1) / count
                own_sq[b] = own_sq.get(b, 0) + sum(e * e for e in es)
                own_df[b] = own_df.get(b, 0) + share
        round_levels.append(list(levels.values()))
        # Slots: with a step_sequence, slot s of a round is the s-th step of every worker.
        slot_cells = {}
        for (b, k), r in figures.items():
            seq = r.get("step_sequence") or []
            if len(seq) != len(r["samples_ms"]):
                continue
            for s, x in enumerate(r["samples_ms"]):
                slot_cells[(b, (k, s))] = math.log(x)
        if len(slot_cells) > 3:
            rounds = {}
            _, slot_level, _, _ = fit_two_way(slot_cells)
            for (k, s), level in slot_level.items():
                rounds.setdefault(k, []).append(level)
            slot_levels.extend(rounds.values())
        base = {k: y for (b, k), y in cells.items() if b == args.baseline}
        for (b, k), y in cells.items():
            if b != args.baseline and k in base:
                ratios.setdefault(b, {}).setdefault(path, []).append(y - base[k])

    print("| backend | steps a round | step to step | disturbed steps (> 10%) | worker to worker "
          "| sd of the rounds' ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for b in backends:
        step_var = step_sq[b] / step_df[b] if step_df.get(b) else float("nan")
        own_var = own_sq[b] / own_df[b] if own_df.get(b) else float("nan")
        worker_var = own_var - step_var / own_n[b]
        added = disturbed.get(b, [])
        added_text = (f"{len(added)} of {steps_seen[b]} (median +{100 * sorted(added)[len(added) // 2]:.0f}%)"
                      if added else f"0 of {steps_seen[b]}")
        pooled = [variance(v) for v in ratios.get(b, {}).values() if len(v) > 1]
        ratio_var = sum(pooled) / len(pooled) if pooled else float("nan")
        print(f"| {b} | {own_n[b]} | {pct(step_var)} | {added_text} | {pct(worker_var)} "
              f"| {pct(ratio_var) if b != args.baseline else 'baseline'} |")
    shared = [variance(levels) for levels in round_levels if len(levels) > 1]
    print()
    print(f"Shared by a round (sd of the rounds' levels, each run's own): "
          f"{pct(sum(shared) / len(shared)) if shared else '-'}")
    within = [variance(levels) for levels in slot_levels if len(levels) > 1]
    if within:
        print(f"Within a round, paired steps (sd of the slots' levels about their round's): "
              f"{pct(sum(within) / len(within))}")
    print_worker_times(backends, all_rows)
    return 0


def print_worker_times(backends, rows):
    def span(xs):
        lo, hi = min(xs) / 1000, max(xs) / 1000
        return f"{lo:.1f} s" if round(lo, 1) == round(hi, 1) else f"{lo:.1f}-{hi:.1f} s"

    print()
    print("| backend | workers | set-up | warm-up | its first step | timed | worker |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for b in backends:
        mine = [r for r in rows if r["backend"] == b]
        setup = [r.get("setup_ms", 0) for r in mine]
        warmup = [sum(r.get("warmup_ms", [])) for r in mine]
        first = [r["warmup_ms"][0] for r in mine if r.get("warmup_ms")]
        timed = [sum(r["samples_ms"]) for r in mine]
        whole = [a + w + t for a, w, t in zip(setup, warmup, timed)]
        print(f"| {b} | {len(mine)} | {span(setup)} | {span(warmup)} | "
              f"{span(first) if first else '-'} | {span(timed)} | {span(whole)} |")


if __name__ == "__main__":
    sys.exit(main())
