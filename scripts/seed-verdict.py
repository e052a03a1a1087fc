#!/usr/bin/env python3
"""The plain-language verdict of scripts/explain-seed.sh: the seed's question answered in words
from the figures of the report it wrote (OUT_DIR/report.md: `harness report --explain --by kind`)
and from the CSVs of its rounds (the CPU time, which the report gives only as CPU/wall).

    seed-verdict.py OUT_DIR [--base tensorflow-seed] [--default tensorflow-default]
                            [--baseline libtorch-cpu]

Prints a Markdown section to stdout. It opens with two gaps: the port as the seed ran it, on
TensorFlow's own kernels (2017's situation), and the port as TensorFlow runs it on this machine
with nothing set, whose kernels (and the CPU features that chose them) its runs' manifests give.
Every figure in it is one of the report's (a gap or a cost with its 95% interval, an operation
count, milliseconds per operation kind) or the mean over the rounds of a CSV column, as the report
takes it; it computes no statistic of its own. Standard library only.
"""
import argparse
import csv
import json
import re
import statistics
import sys
from pathlib import Path

# The seed's own figures: the TensorFlow port and the Torch original, ms per step on one GPU.
SEED_TF_MS, SEED_TORCH_MS = 717, 343

# What each change of the explain table tests, by the key it changes: its short name, its words.
IDEAS = {
    "batchnorm": ("fused batch norm", "**Fused batch norm**, the answer's first idea"),
    "placement": ("no feed_dict",
                  "**No `feed_dict`**, its second: the batches kept in the session, nothing fed"),
    "xla": ("XLA", "**XLA** (auto-clustering)"),
    "onednn": ("oneDNN's kernels", "**oneDNN's kernels** inside TensorFlow"),
    "config": ("the models' differences",
               "**The two models' differences**: the Torch original's model "
               "(configs/hourglass8.yaml: convolution biases, a batch-norm scale, the losses "
               "summed, Torch's RMSProp) against the port's, on the same backend"),
}


def cells(line):
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def tables(markdown):
    """Every table of the report: (the heading above it, its header cells, its rows' cells)."""
    found, heading, lines = [], "", markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("# ")
        if line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header, rows = cells(line), []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            found.append((heading, header, rows))
            continue
        i += 1
    return found


def round_medians(out_dir, pattern):
    """Per backend of the CSVs matching `pattern`: the mean over rounds of median_ms and cpu_ms,
    as the report's explain table takes it."""
    values = {}
    for path in sorted(out_dir.glob(pattern)):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row.get("status") != "ok":
                    continue
                v = values.setdefault(row["backend"], {"median_ms": [], "cpu_ms": []})
                for key in v:
                    if row.get(key):
                        v[key].append(float(row[key]))
    return {b: {k: statistics.mean(x) if x else None for k, x in v.items()}
            for b, v in values.items()}


def manifests(out_dir, pattern):
    """Per backend of the JSON sidecars matching `pattern`: the manifest of its first ok run."""
    found = {}
    for path in sorted(out_dir.glob(pattern)):
        for run in json.loads(path.read_text()).get("runs", []):
            if run.get("status") == "ok" and run.get("manifest"):
                found.setdefault(run["backend"], run["manifest"])
    return found


def number(text):
    m = re.search(r"[-+]?\d+(\.\d+)?", text or "")
    return float(m.group()) if m else None


def percents(text):
    """"-9.5% [-13.7%, -5.1%]" -> (-9.5, -13.7, -5.1); the interval None when there is none."""
    values = [float(v) for v in re.findall(r"[-+]?\d+(?:\.\d+)?(?=%)", text)]
    return (values + [None, None])[:3]


def phrase(key, verdict, cost):
    """A change's cost, from the seed's setting to the one advised (or from the port's model to
    the original's), in words."""
    value, lo, hi = percents(cost)
    interval = f" [{lo:+.1f}%, {hi:+.1f}%]" if lo is not None else ""
    if verdict == "no significant difference":
        return f"no significant difference ({value:+.1f}%{interval})"
    if not verdict:
        return f"{value:+.1f}%, over too few steps for a verdict"
    if key == "config":
        more = "more" if verdict == "slower" else "less"
        return f"the original's model takes {abs(value):.1f}% {more} time{interval}"
    if verdict == "faster":
        return f"real: it saves {-value:.1f}% of the step [{-hi:.1f}%, {-lo:.1f}%]"
    return f"the opposite: it costs {value:.1f}% more{interval}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--base", default="tensorflow-seed")
    parser.add_argument("--default", default="tensorflow-default")
    parser.add_argument("--baseline", default="libtorch-cpu")
    args = parser.parse_args()
    base, default, baseline = args.base, args.default, args.baseline
    report = (args.out_dir / "report.md").read_text()
    found = tables(report)
    medians = round_medians(args.out_dir, "seed-round*.csv")
    if base not in medians or baseline not in medians:
        sys.exit(f"seed-verdict: {base} or {baseline} has no ok row in {args.out_dir}/seed-round*.csv")

    out = ["", "## Verdict", ""]
    cpu = re.search(r"CPU (.*?) — GPU", report)
    machine = cpu.group(1) if cpu else "its CPU"
    tf_ms, torch_ms = medians[base]["median_ms"], medians[baseline]["median_ms"]

    def gap(backend):
        """Over every round (with its interval), else the one round's "vs" column."""
        return next((r[3] for _, h, rows in found if h[:3] == ["config", "backend", "rounds"]
                     for r in rows if r[1] == backend), None) or next(
            (r[-1].split(", p")[0] for _, h, rows in found
             if h and h[0] == "backend" and h[-1].startswith("vs ")
             for r in rows if r[0] == backend),
            f"{medians[backend]['median_ms'] / torch_ms:.2f}x")

    port = ("batch norm as primitive ops, float64 arrays fed and converted every step")
    seed_figures = (f"The seed measured {SEED_TF_MS} ms against {SEED_TORCH_MS} ms "
                    f"({SEED_TF_MS / SEED_TORCH_MS:.2f}x) on its GPU.")
    manifest = manifests(args.out_dir, "seed-round*.json").get(default)
    if default not in medians or not manifest:
        out.append(f"On this machine ({machine}), the seed's TensorFlow port run as the seed ran "
                   f"it (`{base}`: {port}, TensorFlow's own kernels) takes {tf_ms:.0f} ms per "
                   f"step: **{gap(base)}** the time of the same model on LibTorch (`{baseline}`, "
                   f"{torch_ms:.0f} ms). {seed_figures}")
    else:
        onednn = manifest.get("kernels", "").startswith("oneDNN")
        kernels = "oneDNN's kernels" if onednn else "TensorFlow's own kernels"
        why = manifest.get("onednn_default", "")
        features = why.split("the CPU has ", 1)[-1].replace("none of ", "")
        out.append(f"On this machine ({machine}), the seed's TensorFlow port ({port}) against "
                   f"the same model on LibTorch (`{baseline}`, {torch_ms:.0f} ms per step), its "
                   f"time over LibTorch's with the 95% interval:")
        out.append("")
        out.append(f"- **On TensorFlow's own kernels, as the seed ran it** (`{base}`; 2017's "
                   f"situation, when TensorFlow had no oneDNN kernels): {tf_ms:.0f} ms per step, "
                   f"**{gap(base)}**.")
        out.append(f"- **As TensorFlow {manifest.get('tensorflow', '')} runs it here with nothing "
                   f"set** (`{default}`: the same port, "
                   f"{kernels}): "
                   f"{medians[default]['median_ms']:.0f} ms per step, **{gap(default)}**.")
        out.append("")
        rule = ("on Linux x86, TensorFlow turns its oneDNN kernels on when the CPU has a "
                "neural-network feature (AVX-512 VNNI or BF16, AVX-VNNI, AMX)")
        if onednn:
            out.append(f"This machine's default is oneDNN's kernels: {rule}, and this CPU has "
                       f"{features}. Who installs TensorFlow today and runs the seed's port here "
                       f"gets the second gap; the first reconstructs 2017. {seed_figures}")
        else:
            out.append(f"This machine's default is TensorFlow's own kernels: {rule}, and this CPU "
                       f"has none of them ({features}). Here the seed's gap is the one a user "
                       f"gets today. {seed_figures}")
    out.append("")
    out.append(f"Each idea measured alone, as one change from `{base}` (or, for the models, "
               f"from the port's model on `{baseline}`), with its 95% interval:")
    out.append("")
    real, not_real = [], []
    explain = next((rows for _, h, rows in found if h[:4] == ["config", "entry", "base", "change"]),
                   [])
    for r in explain:
        entry, change, cost, verdict = r[1], r[3], r[7], r[9]
        key = change.split(":")[0]
        name, idea = IDEAS.get(key, (change, f"**{change}**"))
        if entry == default:
            idea = "**TensorFlow's default** on this machine, nothing set"
        out.append(f"- {idea} (`{entry}`, {change}): {phrase(key, verdict, cost)}.")
        if key != "config" and entry != default:
            (real if verdict == "faster" else not_real).append(name)

    largest = []
    kinds = next(((h, rows) for _, h, rows in found if h and h[0] == "operation kind"
                  and base in h and baseline in h), None)
    if kinds:
        header, rows = kinds
        column = {name: i for i, name in enumerate(header)}
        by_kind = {r[0].strip("*"): r for r in rows}

        def ms(kind, backend):
            row = by_kind.get(kind)
            return number(row[column[backend]]) if row else None

        ops = {b: [ms(f"operations run: {p}", b) for p in ("forward", "backward")]
               for b in (base, baseline)}
        between = {b: (ms("unaccounted (between operations)", b), ms("step (profiled)", b))
                   for b in (base, baseline)}
        fused = next((r[1] for r in explain if r[3].startswith("batchnorm:")), None)
        fused_ops = [ms(f"operations run: {p}", fused) for p in ("forward", "backward")] \
            if fused in column else [None, None]
        if all(v is not None for pair in ops.values() for v in pair):
            (tf_between, tf_step), (torch_between, _) = between[base], between[baseline]
            fewer = (f" (with fused batch norm, {fused_ops[0]:.0f} and {fused_ops[1]:.0f})"
                     if None not in fused_ops else "")
            out.append(
                f"- **A finer-grained graph**, the answer's claim: `{base}` runs "
                f"{ops[base][0]:.0f} operations in its forward pass and {ops[base][1]:.0f} in its "
                f"backward pass{fewer}, `{baseline}` {ops[baseline][0]:.0f} and "
                f"{ops[baseline][1]:.0f}. The executor's time between TensorFlow's operations "
                f"is {tf_between:.0f} ms, {100 * tf_between / tf_step:.1f}% of its traced step "
                f"({torch_between:.0f} ms for LibTorch); what the extra operations cost beyond "
                f"that is inside them, in the operation kinds below.")
        # The convolutions' backward kinds merged: LibTorch reports data and weights as one.
        merged = {}
        for kind, row in by_kind.items():
            if kind.startswith(("operations", "sum of", "step", "unaccounted")):
                continue
            name = "convolution backward" if kind.startswith("convolution backward") else kind
            pair = merged.setdefault(name, [0.0, 0.0])
            pair[0] += number(row[column[base]]) or 0
            pair[1] += number(row[column[baseline]]) or 0
        largest = sorted(merged.items(), key=lambda kv: kv[1][1] - kv[1][0])[:3]
        left = "; ".join(f"{kind} {a:.0f} ms against {b:.0f}" for kind, (a, b) in largest)
        traced = {b: (ms("step (profiled)", b), ms("step (timed, median, unprofiled)", b))
                  for b in (base, baseline)}
        cost = "; ".join(f"`{b}`'s {100 * (p / t - 1):+.0f}%" for b, (p, t) in traced.items()
                         if p and t)
        out.append(f"- **What is left**, where `{base}`'s profiled step spends more than "
                   f"`{baseline}`'s (ms per step, the largest three): {left}. These are traced "
                   f"steps, and tracing lengthens a step with its number of operations "
                   f"({cost} over its untraced median), so the kinds of many small operations "
                   f"read high.")

    tf_cpu, torch_cpu = medians[base]["cpu_ms"], medians[baseline]["cpu_ms"]
    if tf_cpu and torch_cpu:
        out.append(
            f"- **The seed's clock**: Python 2's `time.clock()` is the process's CPU time over all "
            f"its threads. It would have printed {tf_cpu:.0f} ms per step for `{base}` (CPU/wall "
            f"{tf_cpu / tf_ms:.2f}) and {torch_cpu:.0f} ms for `{baseline}` "
            f"({torch_cpu / torch_ms:.2f}): a ratio of {tf_cpu / torch_cpu:.2f}x in CPU time "
            f"against {tf_ms / torch_ms:.2f}x in wall time. A CPU-time figure set beside a "
            f"wall-time one (Torch's timer reports real time) compares two clocks.")
    traces = sorted((args.out_dir / "perfetto").glob("*.json.gz"))
    if traces:
        out.append("- **The timelines** the answer advised reading, one per entry (open them in "
                   "ui.perfetto.dev): " +
                   ", ".join(f"[{t.name[:-len('.json.gz')]}](perfetto/{t.name})" for t in traces) +
                   ".")
    out.append("")
    summary = ("Real savings on today's TensorFlow on this CPU: " + ", ".join(real) + ". " if real else
               "None of the answer's ideas is a real saving here. ")
    if not_real:
        summary += "No saving here: " + ", ".join(not_real) + ". "
    closest = min(((r[3], r[1]) for _, h, rows in found if h[:3] == ["config", "backend", "rounds"]
                   for r in rows if r[1].startswith("tensorflow")), key=lambda x: number(x[0]),
                  default=None)
    if closest:
        summary += (f"The closest TensorFlow comes is `{closest[1]}`, {closest[0]} the time of "
                    f"`{baseline}`. ")
    if largest:
        kind, (a, b) = largest[0]
        summary += (f"Of what remains, the largest part is {kind}: {a:.0f} ms per step in "
                    f"`{base}` against {b:.0f} ms in `{baseline}`.")
    out.append(summary)
    print("\n".join(out))


if __name__ == "__main__":
    main()
