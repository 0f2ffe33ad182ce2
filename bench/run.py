#!/usr/bin/env python3
"""Runs the benchmarks: tapegrad against PyTorch and NumPy.

    run.py --tg-bench PATH [--quick] [--reps N] [--threads 1,2]
           [--only NAME ...] [--out DIR] [--doc MD]
    run.py --tg-bench PATH --scaling [--quick] [--reps N] [--out DIR]
           [--doc MD]

./scripts/bench.sh builds tg_bench and calls this; docs/performance.md
explains every row and the method. For each thread count, each contender
is one persistent process (bench/tg_bench, bench/torch_bench.py --backend
torch, --backend numpy) started with that count in its environment. For
each workload every contender is set up, tapegrad's result is checked once
against PyTorch (else NumPy), and then the contenders take turns, one
sample each, the order rotated every round; warm-up samples are dropped.
A cell is the median of the rounds with its min-max spread.

Writes the table and the targets to stdout, and DIR/bench.csv,
DIR/bench_memory.csv, DIR/bench_targets.csv, DIR/bench.dat, DIR/bench.gp
and, when gnuplot is installed, DIR/bench.png. --scaling measures
tapegrad / PyTorch at 1 thread over the sizes of SCALING instead, the same
way, and writes DIR/scaling.csv, scaling.dat, scaling.gp and scaling.png.
"""
import argparse
import csv
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
M, N = 4096, 768          # LayerNorm / BatchNorm1d workload
BN2D = 32 * 64 * 32 * 32  # BatchNorm2d workload, elements
MATMUL = 1024
F32 = 4

# name, what it is, minimum bytes moved (GB/s column) or flops (GFLOP/s),
# target on tapegrad / PyTorch time, the median of the rounds (None:
# reported only; 1 / 12 is "12x faster")
ROWS = [
    ("ln_fwd", "LayerNorm forward (4096, 768)", ("B", 2 * M * N * F32), None),
    ("ln_fwd_bwd", "LayerNorm fwd+bwd (4096, 768)", ("B", 5 * M * N * F32),
     0.45),
    ("ln_small_fwd_bwd", "LayerNorm fwd+bwd (64, 768)",
     ("B", 5 * 64 * N * F32), 1.0),
    ("ln_composed_fwd_bwd", "LayerNorm composed fwd+bwd",
     ("B", 5 * M * N * F32), None),
    ("bn1d_fwd_bwd", "BatchNorm1d train fwd+bwd (4096, 768)",
     ("B", 5 * M * N * F32), 0.7),
    ("bn1d_composed_fwd_bwd", "BatchNorm1d composed fwd+bwd",
     ("B", 5 * M * N * F32), None),
    ("bn2d_fwd_bwd", "BatchNorm2d train fwd+bwd (32, 64, 32, 32)",
     ("B", 5 * BN2D * F32), 0.8),
    ("matmul", "matmul 1024^3 (OpenBLAS when built with it)",
     ("F", 2 * MATMUL ** 3), None),
    # the default build's kernel (OpenBLAS is off unless asked for)
    ("matmul_portable", "matmul 1024^3, portable C kernel",
     ("F", 2 * MATMUL ** 3), 1.25),
    ("mlp_tiny_step", "tiny MLP training step (batch 32, LayerNorm)", None,
     1 / 12),
    ("mlp_medium_step", "medium MLP training step (batch 256, BatchNorm)",
     None, 1 / 2.5),
    ("tape_op_fwd", "tape: one recorded add of (4,) tensors", None, None),
    ("tape_op_bwd", "tape: one add, forward and backward", None, None),
    # the "% copy" column's denominator
    ("copy", "copy of 12.6 MB", ("B", 2 * M * N * F32), None),
    # LayerNorm fwd+bwd's four buffers (x, y, dy, dx): 50 MB, beyond a 32 MB
    # L3 cache, where copy's 25 MB may stay; the denominator of LayerNorm's
    # 75%-of-copy target (evaluate_targets)
    ("copy_ws", "two copies of 12.6 MB (LayerNorm fwd+bwd's 50 MB)",
     ("B", 4 * M * N * F32), None),
    # three products of 2 * 64 * 8 * 8 * 16 * 16 * 9 flops: y, dx and dw
    ("conv_fwd_bwd", "Conv2d 16->16 3x3 pad 1 fwd+bwd (64, 16, 8, 8)",
     ("F", 3 * 2 * 64 * 64 * 16 * 16 * 9), None),
]
CONTENDERS = ["tapegrad", "torch", "numpy"]


class Contender:
    """One persistent benchmark process."""

    def __init__(self, name, argv, threads):
        env = dict(os.environ)
        for k in ("TG_KERNELS", "TG_NUM_THREADS"):
            env.pop(k, None)
        # OMP_DYNAMIC=false: the team has the threads the row says, not
        # fewer on a loaded machine (the library's default; the contention
        # marks say when the machine was busy).
        env.update({"OMP_DYNAMIC": "false",
                    "OMP_NUM_THREADS": str(threads),
                    "OPENBLAS_NUM_THREADS": str(threads),
                    "TG_NUM_THREADS": str(threads)})
        self.name = name
        self.dead = False
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True,
                                     env=env, bufsize=1)

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            self.dead = True
            try:
                code = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait()
            raise RuntimeError("%s stopped answering (exit %s) after %r" % (
                self.name, code, line))
        return reply.strip()

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        return self.proc.wait(timeout=60)


def fmt_time(s):
    if s is None:
        return "-"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return "%.3g %s" % (s / scale, unit)
    return "%.3g ns" % (s / 1e-9)


def fmt_cell(c):
    if not c:
        return "-"
    lo, hi = c["min"] / c["median"], c["max"] / c["median"]
    return "%s [-%.0f%% +%.0f%%]" % (fmt_time(c["median"]), 100 * (1 - lo),
                                     100 * (hi - 1))


def fmt(v, spec="%.3g"):
    return "-" if v is None else spec % v


def calibrate(tg, threads):
    """(wall, cpu) of tapegrad's calibration loop at `threads` threads."""
    wall, cpu = (float(v) for v in tg.ask("calib %d" % threads).split())
    return wall, cpu


def contention(threads, calibs, reference, samples):
    """Why this row cannot be measured here, or None when the machine was
    quiet around it. calibs: (wall, cpu) of the calibration loop before and
    after the row; reference: the quietest one-thread calibration of the
    run (CPU seconds); samples: {contender: [(wall, cpu, faults)]}."""
    cpus = os.cpu_count() or 1
    if threads > cpus:
        return "%d threads on %d CPUs" % (threads, cpus)
    for wall, cpu in calibs:
        if cpu < 0.9 * threads * wall:
            return "the calibration loop got %.1f of %d cores" % (
                cpu / wall, threads)
        if reference and cpu / threads > 1.15 * reference:
            return "the calibration loop ran %.0f%% slower than at the " \
                   "start (a busy sibling core or a lower clock)" % (
                       100 * (cpu / threads / reference - 1))
    if threads == 1:
        for name, ss in samples.items():
            worst = min(c / w for w, c, _ in ss if w > 0) if ss else 1
            if worst < 0.9:
                return "%s was descheduled (CPU / wall %.2f in a sample)" % (
                    name, worst)
    return None


def measure_row(row, procs, threads, args, checker, reference):
    """Sets up, checks and times one workload on every contender."""
    name = row[0]
    tg = next((c for c in procs if c.name == "tapegrad"), None)
    calibs = [calibrate(tg, threads)] if tg else []
    active, cold = [], {}
    for c in procs:
        reply = c.ask("setup %s %d %s %g" % (name, threads, args.size,
                                             args.min_seconds))
        if reply.startswith("ok"):
            active.append(c)
            f = reply.split()
            cold[c.name] = float(f[2]) if len(f) > 2 else None
        elif reply != "unsupported":
            print("  %s %s: %s" % (c.name, name, reply), file=sys.stderr)
    result = {"check": "-", "cells": {}, "saved": {}, "peak": {},
              "ratios": {}, "faults": {}, "cold": cold, "contended": None}
    tg = tg if tg in active else None
    if tg and checker and (threads == args.check_threads or not args.quick):
        with tempfile.TemporaryDirectory() as d:
            reply = tg.ask("check " + d)
            if reply == "ok":
                reply = checker.ask("verify %s %s" % (name, d))
            result["check"] = reply.split()[0] if reply else "error"
            if not reply.startswith(("ok", "skip")):
                print("  CHECK FAILED %s (%d threads): %s" % (name, threads,
                                                            reply))
    for c in active:
        r = dict(kv.split("=") for kv in c.ask("mem").split())
        result["saved"][c.name] = int(r["saved"]) if int(r["saved"]) >= 0 \
            else None
        result["peak"][c.name] = int(r["peak"]) if int(r["peak"]) >= 0 \
            else None
    samples = {c.name: [] for c in active}
    rounds = args.warmup + args.reps
    for k in range(rounds):
        order = active[k % len(active):] + active[:k % len(active)] \
            if active else []
        for c in order:
            reply = c.ask("run")
            try:
                wall, cpu, faults = (float(v) for v in reply.split())
            except ValueError:
                raise RuntimeError("%s %s: %s" % (c.name, name, reply))
            if k >= args.warmup:
                samples[c.name].append((wall, cpu, faults))
    if tg:
        calibs.append(calibrate(tg, threads))
    # One thread: CPU time, which a busy machine disturbs least. More: wall
    # time (CPU time would add the threads up), trusted only on a quiet
    # machine, which the calibration loop tells.
    pick = 1 if threads == 1 else 0
    times = {c: [s[pick] for s in ss] for c, ss in samples.items()}
    for cname, s in times.items():
        result["cells"][cname] = {"median": statistics.median(s),
                                  "min": min(s), "max": max(s)}
        result["faults"][cname] = statistics.median(
            f for _, _, f in samples[cname])
    for other in ("torch", "numpy"):
        if "tapegrad" in times and other in times:
            r = [a / b for a, b in zip(times["tapegrad"], times[other])]
            result["ratios"][other] = {"median": statistics.median(r),
                                       "min": min(r), "max": max(r)}
    result["contended"] = contention(threads, calibs, reference, samples)
    return result


def openblas_core(program):
    """The kernels OpenBLAS picked at load in tg_bench ("Prescott",
    "SkylakeX", ...), or None without OpenBLAS. torch and NumPy load the
    same library on Debian and pick the same."""
    env = dict(os.environ, OPENBLAS_VERBOSE="2")
    r = subprocess.run([program], input="quit\n", capture_output=True,
                       text=True, env=env)
    for line in r.stderr.splitlines():
        if line.startswith("Core: "):
            return line[6:].strip()
    return None


def rate(row, cell):
    if not cell or not row[2]:
        return None
    return row[2][1] / cell["median"] / 1e9


def row_named(name):
    """The ROWS entry of a workload (by name: the rows' order changes)."""
    return next(r for r in ROWS if r[0] == name)


def copy_bandwidth(threads_list, results):
    """{threads: tapegrad's copy GB/s}, None where the copy row did not
    run or ran on a contended machine."""
    bw = {}
    for t in threads_list:
        r = results.get(("copy", t))
        c = r["cells"].get("tapegrad") if r else None
        bw[t] = rate(row_named("copy"), c) if c and not r["contended"] \
            else None
    return bw


def pct_of_copy(name, cell, copy_gbs):
    """Workload `name`'s tapegrad rate (GB/s) over the copy's, in %."""
    r = rate(row_named(name), cell)
    return 100 * r / copy_gbs if r and copy_gbs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tg-bench", required=True, help="the tg_bench program")
    ap.add_argument("--python", default=sys.executable,
                    help="Python with NumPy (and PyTorch) for the others")
    ap.add_argument("--quick", action="store_true",
                    help="3 rounds of 10 ms samples (under a minute)")
    ap.add_argument("--reps", type=int, help="rounds kept (default 11)")
    ap.add_argument("--threads", default="1,2", help="e.g. 1,2")
    ap.add_argument("--only", nargs="+", metavar="NAME",
                    help="only these workloads (copy is always run)")
    ap.add_argument("--out", default="out/bench")
    ap.add_argument("--doc", metavar="MD",
                    help="write the results between the markers of MD "
                         "(docs/performance.md) after a full run")
    ap.add_argument("--check-doc", metavar="MD",
                    help="only check that MD's results are in the format "
                         "this script writes, and exit")
    ap.add_argument("--scaling", action="store_true",
                    help="the scaling table instead: tapegrad / PyTorch at "
                         "1 thread over a range of sizes (--quick: fewer)")
    ap.add_argument("--size", default="full", choices=["full", "small"],
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.check_doc:
        with open(args.check_doc) as f:
            text = f.read()
        problems = check_doc(text) + check_scaling_doc(text)
        for p in problems:
            print("%s: %s" % (args.check_doc, p))
        return 1 if problems else 0
    args.reps = args.reps or (3 if args.quick else 11)
    args.warmup = 1 if args.quick else 2
    args.min_seconds = 0.01 if args.quick else 0.05
    threads_list = [int(t) for t in args.threads.split(",") if t]
    # --quick checks the results at the first thread count only (they do
    # not depend on it: the tests check that bit for bit).
    args.check_threads = threads_list[0]
    names = [r[0] for r in ROWS]
    if args.only:
        unknown = [n for n in args.only if n not in names]
        if unknown:
            ap.error("unknown workload %s; the workloads are: %s" % (
                ", ".join(unknown), " ".join(names)))
    rows = [r for r in ROWS if not args.only or r[0] in args.only
            or r[0] == "copy"
            or (r[0] == "copy_ws" and "ln_fwd_bwd" in args.only)]

    core = openblas_core(args.tg_bench)
    if core:
        print("OpenBLAS kernels: %s (OpenBLAS's choice for this CPU; "
              "OPENBLAS_CORETYPE=NAME chooses others for every contender)"
              % core)
    have_torch = subprocess.run(
        [args.python, "-c", "import torch"], capture_output=True).returncode == 0
    if not have_torch:
        print("PyTorch not found: apt-get install python3-torch "
              "(its columns show -)")
    tb = os.path.join(HERE, "torch_bench.py")
    results = {}
    machine = {"cpu": cpu_model(), "cpus": os.cpu_count() or 1,
               "openblas": core,
               "load_before": os.getloadavg()[0]}
    # The quietest of a few one-thread calibration loops: the reference a
    # row's own calibrations are compared with.
    cal = Contender("tapegrad", [args.tg_bench], 1)
    machine["reference"] = min(calibrate(cal, 1)[1] for _ in range(3))
    cal.close()
    if args.scaling:
        return scaling(args, machine, have_torch, tb)
    argvs = [("tapegrad", [args.tg_bench])]
    if have_torch:
        argvs.append(("torch", [args.python, tb, "--backend", "torch"]))
    argvs.append(("numpy", [args.python, tb, "--backend", "numpy"]))
    for threads in threads_list:
        procs = [Contender(name, argv, threads) for name, argv in argvs]
        for row in rows:
            print("  %-22s %d thread%s ..." % (row[0], threads,
                  "" if threads == 1 else "s"), file=sys.stderr, flush=True)
            try:
                # the checker is PyTorch when present, else NumPy
                results[(row[0], threads)] = measure_row(
                    row, procs, threads, args, procs[1], machine["reference"])
            except RuntimeError as e:
                # A contender failed or died: the row shows "error" and
                # the run goes on with a fresh process in its place.
                print("  %s (%d thr): %s" % (row[0], threads, e))
                results[(row[0], threads)] = {
                    "check": "error", "cells": {}, "saved": {}, "peak": {},
                    "ratios": {}, "faults": {}, "cold": {},
                    "contended": "a contender failed"}
                for i, c in enumerate(procs):
                    if c.dead:
                        procs[i] = Contender(c.name, argvs[i][1], threads)
        for c in procs:
            if c.close() != 0:
                print("  %s exited with an error" % c.name, file=sys.stderr)
    machine["load_after"] = os.getloadavg()[0]
    lines = report(rows, threads_list, results, args, have_torch, machine)
    if args.doc:
        if args.quick or args.only or args.size != "full":
            print("not writing %s: only a full run goes there" % args.doc)
        else:
            write_doc(args.doc, doc_block(machine, lines, args))
            print("wrote the results into %s" % args.doc)
    bad = sorted("%s (%d thr)" % k for k, r in results.items()
                 if r["check"] in ("fail", "error"))
    if bad:
        print("\nFAILED (wrong result or error, see above): " + ", ".join(bad))
    return 1 if bad else 0


HEADER = ["workload", "thr", "tapegrad", "torch", "numpy",
          "tg/torch [min max]", "tg/numpy", "tg rate", "% copy",
          "tg faults/it (cold)", "torch faults/it", "machine", "check"]
TARGET_HEADER = ["target", "measured", "wanted", "status"]
# What the targets call the rows that have one (ROWS' last field).
TARGET_LABELS = {
    "ln_fwd_bwd": "LayerNorm fwd+bwd (4096, 768)",
    "ln_small_fwd_bwd": "LayerNorm fwd+bwd (64, 768)",
    "bn1d_fwd_bwd": "BatchNorm1d fwd+bwd",
    "bn2d_fwd_bwd": "BatchNorm2d fwd+bwd",
    "matmul_portable": "matmul, portable kernel (the default build's)",
    "mlp_tiny_step": "tiny MLP step, the default build's kernels",
    "mlp_medium_step": "medium MLP step, default build's kernels, fresh "
                       "block cache",
}
COPY_TARGET = 75  # LayerNorm fwd+bwd's GB/s, % of copy_ws's (its bytes)
NOT_MEASURABLE = "not measurable here"


def fmt_ratio(r):
    if not r:
        return "-"
    return "%.2f [%.2f %.2f]" % (r["median"], r["min"], r["max"])


def fmt_faults(f, cold=None):
    if f is None:
        return "-"
    return "%.3g" % f + ("" if cold is None else " (%.3g)" % cold)


def report(rows, threads_list, results, args, have_torch, machine):
    """Prints the tables and writes the CSV files and the chart; returns
    the printed lines (for --doc)."""
    os.makedirs(args.out, exist_ok=True)
    lines = []

    def out(text=""):
        print(text)
        lines.extend(text.split("\n"))

    # The copy bandwidth: tapegrad's own copy of the LayerNorm input's
    # bytes, in the same process, by the same clock as the rows it divides.
    copy_bw = copy_bandwidth(threads_list, results) \
        if args.size == "full" else {}

    table, csv_rows, notes = [], [], []
    for row in rows:
        for t in threads_list:
            r = results[(row[0], t)]
            cells = r["cells"]
            tg, to, npc = (cells.get(c) for c in CONTENDERS)
            rt, rn = r["ratios"].get("torch"), r["ratios"].get("numpy")
            unit = {"B": "GB/s", "F": "GFLOP/s"}.get(row[2][0]) \
                if row[2] else ""
            tg_rate, to_rate = (rate(row, tg), rate(row, to)) \
                if args.size == "full" else (None, None)
            pct = pct_of_copy(row[0], tg, copy_bw.get(t)) \
                if unit == "GB/s" and row[0] != "copy" else None
            if r["contended"]:
                notes.append("%s (%d thr): %s: %s" % (row[0], t,
                                                      NOT_MEASURABLE,
                                                      r["contended"]))
            table.append([row[0], str(t), fmt_cell(tg), fmt_cell(to),
                          fmt_cell(npc), fmt_ratio(rt),
                          fmt(rn and rn["median"], "%.2f"),
                          fmt(tg_rate, "%.1f " + unit) if unit else "-",
                          fmt(pct, "%.0f%%"),
                          fmt_faults(r["faults"].get("tapegrad"),
                                     r["cold"].get("tapegrad")),
                          fmt_faults(r["faults"].get("torch")),
                          "contended" if r["contended"] else "quiet",
                          r["check"]])
            csv_rows.append({
                "workload": row[0], "threads": t,
                **{"%s_%s_s" % (c, k): (cells[c][k] if c in cells else "")
                   for c in CONTENDERS for k in ("median", "min", "max")},
                **{"ratio_%s_%s" % (c, k): (r["ratios"][c][k]
                                            if c in r["ratios"] else "")
                   for c in ("torch", "numpy")
                   for k in ("median", "min", "max")},
                "tapegrad_rate": tg_rate or "", "torch_rate": to_rate or "",
                "rate_unit": unit, "pct_copy": pct or "",
                **{"%s_faults_per_iter" % c: r["faults"].get(c, "")
                   for c in CONTENDERS},
                "tapegrad_cold_faults": r["cold"].get("tapegrad", ""),
                "contended": r["contended"] or "",
                "check": r["check"]})
    out()
    out("tapegrad against PyTorch and NumPy over %d rounds: median [min, max] "
        "of each sample's time per iteration (1 thread: CPU time; more: "
        "wall time); tg/torch is the median [min, max] of the rounds' "
        "ratios, < 1: tapegrad faster. Rates count the minimum bytes (GB/s) "
        "or flops (GFLOP/s); %% copy is tapegrad's GB/s over its own copy "
        "of 12.6 MB at the same thread count. faults/it: minor page faults "
        "per iteration once warm (cold: the first iteration's). machine: "
        "quiet, or contended (the calibration loop or a sample saw other "
        "work; its targets are not judged). check: tapegrad's result "
        "against %s before timing." % (args.reps,
                                        "PyTorch" if have_torch else "NumPy"))
    out()
    for ln in table_lines(HEADER, table):
        out(ln)
    if notes:
        out()
        for n in notes:
            out(n)
    with open(os.path.join(args.out, "bench.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(csv_rows[0]))
        w.writeheader()
        w.writerows(csv_rows)

    memory(rows, threads_list, results, args, out)
    targets = evaluate_targets(rows, threads_list, results, copy_bw,
                               args.size)
    out()
    out("Targets (from this run)")
    out()
    if targets:
        for ln in table_lines(TARGET_HEADER, targets):
            out(ln)
    else:
        out("(none of the targets' workloads ran)")
    with open(os.path.join(args.out, "bench_targets.csv"), "w",
              newline="") as f:
        w = csv.writer(f)
        w.writerow(TARGET_HEADER)
        w.writerows(targets)
    chart(rows, threads_list, results, args)
    print()
    print("wrote %s/bench.csv, bench_memory.csv, bench_targets.csv%s" % (
        args.out, ", bench.png" if shutil.which("gnuplot") else
        " (no chart: apt-get install gnuplot-nox)"))
    return lines


def memory(rows, threads_list, results, args, emit):
    t = threads_list[0]
    table, out = [], []
    pairs = [("ln_fwd_bwd", "ln_composed_fwd_bwd"),
             ("bn1d_fwd_bwd", "bn1d_composed_fwd_bwd"),
             ("bn2d_fwd_bwd", None)]
    for fused, composed in pairs:
        rf, rc = results.get((fused, t)), results.get((composed, t))
        for c in ("tapegrad", "torch"):
            f = rf["saved"].get(c) if rf else None
            k = rc["saved"].get(c) if rc else None
            if f is None and k is None:
                continue
            table.append([fused.replace("_fwd_bwd", ""), c, fmt_bytes(f),
                          fmt_bytes(k), fmt(k / f if f and k else None,
                                            "%.0fx")])
            out.append(["saved_for_backward", fused, c, f or "", k or ""])
    peaks = []
    for name in ("mlp_tiny_step", "mlp_medium_step"):
        r = results.get((name, t))
        if r:
            peaks.append([name, fmt_bytes(r["peak"].get("tapegrad")),
                          fmt_bytes(r["peak"].get("torch"))])
            for c in ("tapegrad", "torch"):
                out.append(["step_peak", name, c, r["peak"].get(c) or "", ""])
    if table:
        emit()
        emit("Bytes kept for backward (tensors the graph saves beyond the "
            "inputs, parameters and output)")
        emit()
        for ln in table_lines(["op", "library", "fused", "composed",
                               "composed/fused"], table):
            emit(ln)
    if peaks:
        emit()
        emit("Peak memory of a training step above what was allocated "
            "before it (tapegrad: tg_peak_bytes; PyTorch: the profiler's "
            "memory events)")
        emit()
        for ln in table_lines(["step", "tapegrad", "torch"], peaks):
            emit(ln)
    with open(os.path.join(args.out, "bench_memory.csv"), "w",
              newline="") as f:
        w = csv.writer(f)
        w.writerow(["measure", "workload", "library", "fused_or_peak_bytes",
                    "composed_bytes"])
        w.writerows(out)
    return out


def fmt_bytes(b):
    if b is None:
        return "-"
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return "%.3g %s" % (b / scale, unit)
    return "%d B" % b


def evaluate_targets(rows, threads_list, results, copy_bw, size):
    """Each target of the docs with its measured value and met / MISSED;
    "not measurable here" when a row it rests on ran on a contended
    machine (a busy machine decides nothing, either way), "noisy (...)"
    when a sample spread by more than 1.5x (max / min)."""
    out = []

    def status(ok, names, *cells):
        if ok is None:
            return "-"
        if any(results[n]["contended"] for n in names if n in results):
            return NOT_MEASURABLE
        if any(c and c["max"] > 1.5 * c["min"] for c in cells):
            return "noisy (%s)" % ("met" if ok else "MISSED")
        return "met" if ok else "MISSED"

    def cell(name, t, c):
        r = results.get((name, t))
        return r["cells"].get(c) if r else None

    def ratio(name, t):
        r = results.get((name, t))
        return r["ratios"].get("torch") if r else None

    for t in threads_list:
        for row in rows:
            name, lim = row[0], row[3]
            if lim is None or (name, t) not in results:
                continue
            r = ratio(name, t)
            st = status(None if r is None else r["median"] <= lim,
                        [(name, t)], cell(name, t, "tapegrad"),
                        cell(name, t, "torch"))
            if name.startswith("mlp"):
                # the MLP steps' targets are speed-ups: 1 / the ratio
                sp = None if r is None else (
                    1 / r["median"], 1 / r["max"], 1 / r["min"])
                out.append(["%s speed-up over PyTorch eager, %d thr" % (
                    TARGET_LABELS[name], t),
                    "-" if sp is None else "%.1fx [%.1f %.1f]" % sp,
                    ">= %.3gx" % (1 / lim), st])
                continue
            out.append(["%s time / PyTorch's, %d thr" % (
                TARGET_LABELS[name], t), fmt_ratio(r), "<= %.3g" % lim, st])
        if ("matmul", t) in results:
            out.append(["matmul as built (OpenBLAS when built with it) / "
                        "PyTorch's, %d thr" % t,
                        fmt_ratio(ratio("matmul", t)), "reported", "-"])
        if ("ln_fwd_bwd", t) in results:
            tg = cell("ln_fwd_bwd", t, "tapegrad")
            # The target's copy is a copy of the bytes LayerNorm moves:
            # copy_ws, its four buffers. Full-size runs only: the rates
            # count the full sizes' bytes.
            ws = cell("copy_ws", t, "tapegrad") if size == "full" else None
            p_ws = pct_of_copy("ln_fwd_bwd", tg,
                               rate(row_named("copy_ws"), ws))
            st = status(None if p_ws is None else p_ws >= COPY_TARGET,
                        [("ln_fwd_bwd", t), ("copy_ws", t)], tg, ws)
            out.append(["LayerNorm fwd+bwd, %% of a copy of its own 50 MB "
                        "(copy_ws), %d thr" % t, fmt(p_ws, "%.0f%%"),
                        ">= %d%%" % COPY_TARGET, st])
            # the 12.6 MB copy, whose 25 MB may stay in a large L3 cache
            p = pct_of_copy("ln_fwd_bwd", tg, copy_bw.get(t))
            out.append(["LayerNorm fwd+bwd, %% of the 12.6 MB copy (copy), "
                        "%d thr" % t, fmt(p, "%.0f%%"), "reported", "-"])
        # Page faults are counted, not timed: a busy machine does not
        # change them, so this target is judged on any machine.
        faults = [(results[(row[0], t)]["faults"].get("tapegrad"), row[0])
                  for row in rows if (row[0], t) in results]
        faults = [(f, n) for f, n in faults if f is not None]
        if faults:
            worst = max(faults)
            out.append(["no page faults once warm, every workload, %d thr" % t,
                        "0" if worst[0] == 0 else "%.3g/it (%s)" % worst,
                        "0", "met" if worst[0] == 0 else "MISSED"])
    t = threads_list[0]
    for fused, composed, label in (
            ("ln_fwd_bwd", "ln_composed_fwd_bwd", "LayerNorm"),
            ("bn1d_fwd_bwd", "bn1d_composed_fwd_bwd", "BatchNorm1d")):
        rf, rc = results.get((fused, t)), results.get((composed, t))
        if not rf or not rc:
            continue
        f, k = rf["saved"].get("tapegrad"), rc["saved"].get("tapegrad")
        r = k / f if f and k else None
        # bytes, not time: a busy machine does not change them
        out.append(["%s bytes kept for backward, composed / fused" % label,
                    fmt(r, "%.0fx"), ">= 5x",
                    "-" if r is None else ("met" if r >= 5 else "MISSED")])
    return out


def chart(rows, threads_list, results, args):
    """bench.dat and bench.gp: tapegrad / PyTorch per row and thread count
    on a log axis, a line at 1 and a red dash at each row's target."""
    dat = os.path.join(args.out, "bench.dat")
    with open(dat, "w") as f:
        f.write("# workload %s target\n" % " ".join(
            "ratio_%dthr" % t for t in threads_list))
        for row in rows:
            if row[0].startswith("copy"):
                continue
            vals = []
            for t in threads_list:
                c = results[(row[0], t)]["cells"]
                tg, to = c.get("tapegrad"), c.get("torch")
                vals.append("%.4g" % (tg["median"] / to["median"])
                            if tg and to else "?")
            f.write("%s %s %s\n" % (row[0],
                                    " ".join(vals),
                                    "%.4g" % row[3] if row[3] else "?"))
    gp = os.path.join(args.out, "bench.gp")
    plots = ["'bench.dat' using %d:xtic(1) title '%d thread%s'" % (
        i + 2, t, "" if t == 1 else "s") for i, t in enumerate(threads_list)]
    tcol = len(threads_list) + 2
    plots.append("'' using ($0-0.45):%d:(0.9):(0) with vectors nohead lw 3 "
                 "lc rgb 'red' title 'target'" % tcol)
    with open(gp, "w") as f:
        f.write("""# tapegrad time / PyTorch time per workload (bench/run.py)
set terminal pngcairo size 1200,650 font ",10" noenhanced
set output 'bench.png'
set datafile missing '?'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [*:*]  # autoscaled: the line at 1 and the targets are inside
set ylabel "tapegrad time / PyTorch time (< 1: tapegrad faster)"
set xtics rotate by -35 left
set grid ytics
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'
set title "tapegrad against PyTorch (log scale; red: the target)"
plot %s
""" % ", \\\n     ".join(plots))
    run_gnuplot("bench.gp", args.out)


def run_gnuplot(script, folder):
    """Renders folder/script with gnuplot when it is installed; a failure
    is reported, not fatal (the .dat and .gp files stay for a rerun)."""
    if not shutil.which("gnuplot"):
        return
    r = subprocess.run(["gnuplot", script], cwd=folder,
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("gnuplot failed: " + r.stderr.strip(), file=sys.stderr)


def table_lines(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows)
              for i in range(len(header))]
    out = ["  ".join("%-*s" % (w, h) for w, h in zip(widths, header)).rstrip(),
           "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join("%-*s" % (w, str(c)) for w, c in
                             zip(widths, r)).rstrip())
    return out


# ------------------------------------------------ docs/performance.md

DOC_BEGIN, DOC_END = "<!-- results: begin -->", "<!-- results: end -->"
DOC_FIRST = re.compile(r"^Measured on \d{4}-\d{2}-\d{2} on .+ \(\d+ CPUs?\)")
RATIO = re.compile(r"^(-|\d+\.\d\d \[\d+\.\d\d \d+\.\d\d\])$")
STATUSES = {"met", "MISSED", "noisy (met)", "noisy (MISSED)", NOT_MEASURABLE,
            "-"}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def doc_block(machine, lines, args):
    return "\n".join([
        "Measured on %s on %s (%d CPUs), the default build type (-O2), %s; "
        "load average %.2f before the run and %.2f after it. A row marked "
        "contended ran while the calibration loop or its samples saw other "
        "work on the machine: its targets say \"%s\"." % (
            time.strftime("%Y-%m-%d", time.gmtime()), machine["cpu"],
            machine["cpus"],
            "OpenBLAS with its %s kernels" % machine["openblas"]
            if machine.get("openblas") else "without OpenBLAS",
            machine["load_before"], machine["load_after"], NOT_MEASURABLE),
        "", "```text"] + [ln for ln in lines] + ["```"])


def write_doc(path, block):
    with open(path) as f:
        text = f.read()
    a, b = text.index(DOC_BEGIN), text.index(DOC_END)
    text = text[:a + len(DOC_BEGIN)] + "\n" + block.strip("\n") + "\n" + \
        text[b:]
    problems = check_doc(text)
    if problems:
        raise RuntimeError("the block written does not pass --check-doc: "
                           + "; ".join(problems))
    with open(path, "w") as f:
        f.write(text)


def columns(dashes, line):
    """Splits a table line at the columns its dashes line marks."""
    cells, pos = [], 0
    for group in dashes.split("  "):
        cells.append(line[pos:pos + len(group)].strip())
        pos += len(group) + 2
    if line[pos - 2:].strip():
        cells.append(line[pos - 2:].strip())  # text past the last column
    return cells


def read_table(body, header):
    """The rows of the table under `header` in body's lines, or None."""
    for i, line in enumerate(body):
        if re.split(r"  +", line.strip()) == header and i + 1 < len(body):
            dashes = body[i + 1]
            if not re.fullmatch(r"-+(  -+)*", dashes) or \
                    len(dashes.split("  ")) != len(header):
                return None
            rows = []
            for ln in body[i + 2:]:
                if not ln.strip():
                    break
                rows.append(columns(dashes, ln))
            return rows
    return None


def check_doc(text):
    """What keeps the results block of docs/performance.md from being in
    the format write_doc writes (the numbers are not judged)."""
    if DOC_BEGIN not in text or DOC_END not in text:
        return ["no %s ... %s markers" % (DOC_BEGIN, DOC_END)]
    block = text[text.index(DOC_BEGIN) + len(DOC_BEGIN):
                 text.index(DOC_END)].strip("\n").split("\n")
    problems = []
    if not DOC_FIRST.match(block[0]):
        problems.append("the block does not start with \"Measured on DATE "
                        "on CPU (N CPUs)\": %r" % block[0][:80])
    if "```text" not in block or block[-1] != "```":
        return problems + ["the tables are not in one ```text block"]
    body = block[block.index("```text") + 1:-1]
    rows = read_table(body, HEADER)
    names = {r[0] for r in ROWS}
    if not rows:
        problems.append("no results table with the header: "
                        + "  ".join(HEADER))
    for r in rows or []:
        where = "row %r" % " ".join(r)[:60]
        if len(r) != len(HEADER) or not all(r):
            problems.append("%s: %d cells, want %d" % (where, len(r),
                                                       len(HEADER)))
            continue
        if r[0] not in names or not r[1].isdigit():
            problems.append("%s: no such workload or thread count" % where)
        if not RATIO.match(r[5]):
            problems.append("%s: tg/torch %r is not MEDIAN [MIN MAX]" % (
                where, r[5]))
        if r[11] not in ("quiet", "contended"):
            problems.append("%s: machine %r" % (where, r[11]))
        if r[12] not in ("ok", "fail", "error", "skip", "-"):
            problems.append("%s: check %r" % (where, r[12]))
    targets = read_table(body, TARGET_HEADER)
    if not targets:
        problems.append("no targets table")
    for r in targets or []:
        if len(r) != len(TARGET_HEADER) or r[3] not in STATUSES:
            problems.append("target %r: status not one of %s" % (
                " ".join(r)[:60], ", ".join(sorted(STATUSES))))
    return problems


# ------------------------------------------------------------- scaling

# series, workload NAME@PARAM (tg_bench and torch_bench.py parse it), size
SCALING = (
    [("LayerNorm fwd+bwd (M, 768)", "ln_fwd_bwd@%dx768" % m, m)
     for m in (64, 256, 1024, 4096, 16384)] +
    [("LayerNorm fwd+bwd (4096, N)", "ln_fwd_bwd@4096x%d" % n, n)
     for n in (64, 256, 768, 1024, 4096)] +
    [("BatchNorm1d fwd+bwd (M, 768)", "bn1d_fwd_bwd@%dx768" % m, m)
     for m in (64, 256, 1024, 4096, 16384)] +
    [("medium MLP step (2-128-128-3, BatchNorm1d), batch B",
      "mlp_medium_step@%d" % b, b) for b in (8, 32, 128, 512, 2048)])
# --quick: the ends and the middle of each series
SCALING_QUICK = [p for i, p in enumerate(SCALING) if i % 5 in (0, 2, 4)]
SCALING_HEADER = ["series", "size", "tg/torch [min max]", "tapegrad",
                  "torch", "machine", "check"]
SCALING_BEGIN, SCALING_END = "<!-- scaling: begin -->", "<!-- scaling: end -->"
SERIES = {p[0] for p in SCALING}


def scaling(args, machine, have_torch, tb):
    """The scaling table: tapegrad and PyTorch, one process each at 1
    thread, over SCALING's sizes, by measure_row's alternating rounds."""
    if not have_torch:
        print("the scaling table needs PyTorch")
        return 1
    points = SCALING_QUICK if args.quick else SCALING
    procs = [Contender("tapegrad", [args.tg_bench], 1),
             Contender("torch", [args.python, tb, "--backend", "torch"], 1)]
    results = []
    for series, name, size in points:
        print("  %-22s ..." % name, file=sys.stderr, flush=True)
        r = measure_row((name,), procs, 1, args, procs[1],
                        machine["reference"])
        results.append((series, size, r))
    for c in procs:
        c.close()
    machine["load_after"] = os.getloadavg()[0]
    lines = scaling_report(results, args)
    if args.doc:
        if args.quick or args.size != "full":
            print("not writing %s: only a full run goes there" % args.doc)
        else:
            write_scaling_doc(args.doc, scaling_block(machine, lines))
            print("wrote the scaling table into %s" % args.doc)
    bad = [p[1] for p, (_, _, r) in zip(points, results)
           if r["check"] in ("fail", "error")]
    if bad:
        print("\nFAILED (wrong result or error, see above): "
              + ", ".join(bad))
    return 1 if bad else 0


def scaling_rows(results):
    rows = []
    for series, size, r in results:
        c = r["cells"]
        rows.append([series, str(size), fmt_ratio(r["ratios"].get("torch")),
                     fmt_cell(c.get("tapegrad")), fmt_cell(c.get("torch")),
                     "contended" if r["contended"] else "quiet", r["check"]])
    return rows


def scaling_report(results, args):
    os.makedirs(args.out, exist_ok=True)
    lines = ["tapegrad / PyTorch at 1 thread over %d rounds: median [min, "
             "max] of the rounds' ratios (< 1: tapegrad faster), and each "
             "one's CPU time per iteration, median [-min%% +max%%]. machine: "
             "quiet, or contended (the calibration loop or a sample saw "
             "other work)." % args.reps, ""]
    lines += table_lines(SCALING_HEADER, scaling_rows(results))
    for ln in lines:
        print(ln)
    with open(os.path.join(args.out, "scaling.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["series", "size", "ratio_median", "ratio_min",
                    "ratio_max", "tapegrad_s", "torch_s", "contended",
                    "check"])
        for series, size, r in results:
            rt = r["ratios"].get("torch") or {}
            c = r["cells"]
            w.writerow([series, size, rt.get("median", ""),
                        rt.get("min", ""), rt.get("max", ""),
                        c.get("tapegrad", {}).get("median", ""),
                        c.get("torch", {}).get("median", ""),
                        r["contended"] or "", r["check"]])
    scaling_chart(results, args)
    return lines


def scaling_chart(results, args):
    """scaling.dat (one gnuplot data set per series) and scaling.gp: the
    ratio against the size on log axes, with a line at 1."""
    names = []
    with open(os.path.join(args.out, "scaling.dat"), "w") as f:
        for series in [p[0] for p in SCALING]:
            if series in names:
                continue
            names.append(series)
            f.write("# %s\n# size ratio_median ratio_min ratio_max\n"
                    % series)
            for s, size, r in results:
                rt = r["ratios"].get("torch")
                if s == series and rt:
                    f.write("%d %.4g %.4g %.4g\n" % (
                        size, rt["median"], rt["min"], rt["max"]))
            f.write("\n\n")
    plots = ["'scaling.dat' index %d using 1:2:3:4 with yerrorlines "
             "title '%s'" % (i, n.replace("'", "")) for i, n in
             enumerate(names)]
    with open(os.path.join(args.out, "scaling.gp"), "w") as f:
        f.write("""# tapegrad / PyTorch time against the size (run.py --scaling)
set terminal pngcairo size 1000,600 font ",10" noenhanced
set output 'scaling.png'
set logscale x 2
set logscale y
set xlabel "size: M rows, N features or batch B (log scale)"
set ylabel "tapegrad time / PyTorch time (< 1: tapegrad faster)"
set grid
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'
set title "tapegrad against PyTorch at 1 thread, by size (min-max bars)"
plot %s
""" % ", \\\n     ".join(plots))
    run_gnuplot("scaling.gp", args.out)


def scaling_block(machine, lines):
    return "\n".join([
        "Measured on %s on %s (%d CPUs), the default build type (-O2), "
        "%s; load average %.2f before the run and %.2f after it." % (
            time.strftime("%Y-%m-%d", time.gmtime()), machine["cpu"],
            machine["cpus"],
            "OpenBLAS with its %s kernels" % machine["openblas"]
            if machine.get("openblas") else "without OpenBLAS",
            machine["load_before"], machine["load_after"]),
        "", "```text"] + lines + ["```"])


def write_scaling_doc(path, block):
    with open(path) as f:
        text = f.read()
    a, b = text.index(SCALING_BEGIN), text.index(SCALING_END)
    text = text[:a + len(SCALING_BEGIN)] + "\n" + block.strip("\n") + \
        "\n" + text[b:]
    problems = check_scaling_doc(text)
    if problems:
        raise RuntimeError("the block written does not pass --check-doc: "
                           + "; ".join(problems))
    with open(path, "w") as f:
        f.write(text)


def check_scaling_doc(text):
    """What keeps the scaling block of docs/performance.md from being in
    the format write_scaling_doc writes (the numbers are not judged)."""
    if SCALING_BEGIN not in text or SCALING_END not in text:
        return ["no %s ... %s markers" % (SCALING_BEGIN, SCALING_END)]
    block = text[text.index(SCALING_BEGIN) + len(SCALING_BEGIN):
                 text.index(SCALING_END)].strip("\n").split("\n")
    if block == [""]:
        return []  # not measured yet: the markers alone
    problems = []
    if not DOC_FIRST.match(block[0]):
        problems.append("scaling: the block does not start with \"Measured "
                        "on DATE on CPU (N CPUs)\": %r" % block[0][:80])
    if "```text" not in block or block[-1] != "```":
        return problems + ["scaling: the table is not in one ```text block"]
    body = block[block.index("```text") + 1:-1]
    rows = read_table(body, SCALING_HEADER)
    if not rows:
        problems.append("scaling: no table with the header: "
                        + "  ".join(SCALING_HEADER))
    for r in rows or []:
        where = "scaling row %r" % " ".join(r)[:60]
        if len(r) != len(SCALING_HEADER) or not all(r):
            problems.append("%s: %d cells, want %d" % (
                where, len(r), len(SCALING_HEADER)))
            continue
        if r[0] not in SERIES or not r[1].isdigit():
            problems.append("%s: no such series or size" % where)
        if not RATIO.match(r[2]):
            problems.append("%s: tg/torch %r is not MEDIAN [MIN MAX]" % (
                where, r[2]))
        if r[5] not in ("quiet", "contended"):
            problems.append("%s: machine %r" % (where, r[5]))
        if r[6] not in ("ok", "fail", "error", "skip", "-"):
            problems.append("%s: check %r" % (where, r[6]))
    return problems


if __name__ == "__main__":
    sys.exit(main())
