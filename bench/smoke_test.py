#!/usr/bin/env python3
"""Smoke test of the benchmarks (meson test --suite bench): times nothing.

    smoke_test.py --tg-bench PATH

Drives bench/tg_bench through its line protocol on small sizes, at 2
threads: for every workload of bench/run.py it checks that setup, one
timed sample, the result files of `check` and the memory answer come back
well formed, and that the process ends with every tensor released (its exit
status). When NumPy imports, it also verifies the results with the
benchmark's own verifier (bench/torch_bench.py: PyTorch when it imports,
else NumPy), and feeds that verifier a wrong result to see it fail.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load_module(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(
        HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tg-bench", required=True)
    args = ap.parse_args()
    run = load_module("run")
    try:
        import numpy  # noqa: F401
        verifier = load_module("torch_bench")
    except ImportError:
        verifier = None
        print("NumPy not found: results are not verified")

    names = [r[0] for r in run.ROWS]
    env = dict(os.environ, TG_NUM_THREADS="2", OMP_NUM_THREADS="2",
               OPENBLAS_NUM_THREADS="2")
    env.pop("TG_KERNELS", None)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        script, dirs = [], {}
        for name in names:
            dirs[name] = os.path.join(tmp, name)
            os.mkdir(dirs[name])
            script += ["setup %s 2 small 0.0001" % name, "run",
                       "check " + dirs[name], "mem"]
        script += ["calib 2", "setup no_such_workload 1 small 0.001", "run",
                   "quit"]
        p = subprocess.run([args.tg_bench], input="\n".join(script) + "\n",
                           capture_output=True, text=True, env=env,
                           timeout=600)
        replies = p.stdout.splitlines()
        if p.returncode != 0:
            failures.append("tg_bench exited with %d (a tensor left alive, "
                            "or a sanitizer report):\n%s" % (p.returncode,
                                                             p.stderr))
        if len(replies) != len(script) - 1:
            failures.append("expected %d replies, got %d:\n%s" % (
                len(script) - 1, len(replies), p.stdout))
            replies += [""] * len(script)
        for i, name in enumerate(names):
            setup, sample, check, mem = replies[4 * i:4 * i + 4]
            f = setup.split()
            if len(f) != 3 or f[0] != "ok" or int(f[1]) < 1 or int(f[2]) < 0:
                failures.append("%s: setup answered %r (want ok ITERS "
                                "COLD_FAULTS)" % (name, setup))
            try:
                wall, cpu, faults = (float(v) for v in sample.split())
                if not (wall > 0 and cpu >= 0 and faults >= 0):
                    raise ValueError
            except ValueError:
                failures.append("%s: run answered %r (want WALL CPU FAULTS)"
                                % (name, sample))
            if check != "ok":
                failures.append("%s: check answered %r" % (name, check))
            fields = dict(kv.split("=") for kv in mem.split() if "=" in kv)
            if set(fields) != {"saved", "peak"}:
                failures.append("%s: mem answered %r" % (name, mem))
            elif (name.startswith(("ln", "bn")) and name.endswith("fwd_bwd")
                  and not int(fields["saved"]) > 0):
                # measured for the normalisation rows only (tg_bench's
                # cmd_mem); conv_fwd_bwd saves its input and weight, which
                # the measure leaves out
                failures.append("%s: nothing saved for backward? %r" % (
                    name, mem))
            elif name.startswith("mlp") and not int(fields["peak"]) > 0:
                failures.append("%s: no peak memory? %r" % (name, mem))
            if verifier and check == "ok":
                v = verifier.verify(name, dirs[name])
                if not v.startswith(("ok", "skip")):
                    failures.append("%s: %s" % (name, v))
                print("%-22s %s | %s | %s | %s" % (name, setup, sample, mem,
                                                   v))
        if replies[-2:] != ["unsupported", "error run before setup"]:
            failures.append("unknown workload: answered %r" % replies[-2:])
        try:
            wall, cpu = (float(v) for v in replies[-3].split())
            if not (wall > 0 and cpu > 0):
                raise ValueError
        except ValueError:
            failures.append("calib answered %r (want WALL CPU)" % replies[-3])

        # The contention rule: a calibration loop that got one core of two,
        # or a one-thread sample descheduled half the time, is contended;
        # a quiet one is not.
        if run.contention(2, [(0.04, 0.04)], 0.02, {}) is None:
            failures.append("2 threads on one core's worth of CPU time "
                            "passed as quiet")
        if run.contention(1, [(0.02, 0.02)], 0.02,
                          {"tapegrad": [(0.2, 0.1, 0)]}) is None:
            failures.append("a descheduled sample passed as quiet")
        if run.contention(1, [(0.02, 0.0199)], 0.02,
                          {"tapegrad": [(0.1, 0.1, 0)]}) is not None:
            failures.append("a quiet machine was called contended")

        # % of copy: LayerNorm fwd+bwd moves 5 copies' worth of input bytes
        # where the copy moves 2, so at the same time per iteration it runs
        # at 250% of the copy's bandwidth; a rate taken from another row's
        # byte or flop count gives something else.
        cell = {"median": 0.01, "min": 0.01, "max": 0.01}
        bw = run.copy_bandwidth([1], {("copy", 1): {
            "cells": {"tapegrad": cell}, "contended": None}})
        want = 100 * (5 * run.M * run.N * run.F32 / 0.01) / (
            2 * run.M * run.N * run.F32 / 0.01)
        got = run.pct_of_copy("ln_fwd_bwd", cell, bw[1])
        if got is None or abs(got - want) > 1e-9 * want:
            failures.append("%% of copy: %r, want %r" % (got, want))
        if run.copy_bandwidth([1], {("copy", 1): {
                "cells": {"tapegrad": cell}, "contended": "busy"}})[1]:
            failures.append("a contended copy row gave a copy bandwidth")

        # The targets: a warm page fault in any row misses the no-faults
        # target; a ratio over a row's limit misses it, one under meets it.
        def fake(ratio_median, faults):
            c = {"median": 1.0, "min": 1.0, "max": 1.0}
            return {"cells": {"tapegrad": c, "torch": c}, "contended": None,
                    "ratios": {"torch": {"median": ratio_median,
                                         "min": ratio_median,
                                         "max": ratio_median}},
                    "faults": {"tapegrad": faults}, "saved": {}}
        rows = [run.row_named(n) for n in ("ln_small_fwd_bwd", "copy")]
        for ratio_median, faults, want in ((0.9, 0, ["met", "met"]),
                                           (1.1, 0, ["MISSED", "met"]),
                                           (0.9, 2, ["met", "MISSED"])):
            got = [t[3] for t in run.evaluate_targets(rows, [1], {
                ("ln_small_fwd_bwd", 1): fake(ratio_median, faults),
                ("copy", 1): fake(1.0, 0)}, {1: None}, "full")]
            if got != want:
                failures.append("targets for ratio %g, %d faults: %r, want "
                                "%r" % (ratio_median, faults, got, want))
        # LayerNorm against a copy of its own 50 MB (copy_ws), judged in a
        # full-size run only. LayerNorm's 5 buffers in the time of copy_ws's
        # 4 are 125% of its bandwidth (met), in 5/3 of that time exactly
        # 75% (met), in twice that time 62.5% (missed); a small run gives
        # no value; a contended row on either side is not judged, and a
        # spread-out one is noisy.
        rows = [run.row_named(n) for n in ("ln_fwd_bwd", "copy", "copy_ws")]

        def ws_target(size, ln_time, contended=None, ws_spread=1.0):
            results = {(n, 1): fake(1.0, 0) for n in ("copy", "copy_ws",
                                                       "ln_fwd_bwd")}
            results[("ln_fwd_bwd", 1)]["cells"]["tapegrad"] = {
                "median": ln_time, "min": ln_time, "max": ln_time}
            results[("copy_ws", 1)]["cells"]["tapegrad"] = {
                "median": 1.0, "min": 1.0, "max": ws_spread}
            if contended:
                results[(contended, 1)]["contended"] = "busy"
            return [tuple(t[1:4:2]) for t in run.evaluate_targets(
                rows, [1], results, {1: None}, size)
                if "copy of its own 50 MB" in t[0]]

        for case, want in (
                (("full", 1.0), ("125%", "met")),
                (("full", 5 / 3), ("75%", "met")),
                (("full", 2.0), ("62%", "MISSED")),
                (("small", 1.0), ("-", "-")),
                (("full", 1.0, "copy_ws"), ("125%", run.NOT_MEASURABLE)),
                (("full", 1.0, "ln_fwd_bwd"), ("125%", run.NOT_MEASURABLE)),
                (("full", 2.0, None, 1.6), ("62%", "noisy (MISSED)"))):
            got = ws_target(*case)
            if got != [want]:
                failures.append("%% of copy_ws for %r: %r, want %r" % (
                    case, got, [want]))

        # The verifier must reject a wrong result: one element of dx off
        # by 1e-2 (the tolerance is 1e-4).
        if verifier:
            d = dirs["ln_fwd_bwd"]
            dx = numpy.load(os.path.join(d, "dx.npy"))
            dx.flat[dx.size // 2] += 1e-2
            numpy.save(os.path.join(d, "dx.npy"), dx)
            v = verifier.verify("ln_fwd_bwd", d)
            if not v.startswith("fail dx"):
                failures.append("the verifier accepted a wrong dx: %s" % v)
    failures += scaling_names(args.tg_bench, run, verifier, env)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


def scaling_names(tg_bench, run, verifier, env):
    """run.py --scaling's NAME@SIZES workloads: tg_bench sets up and runs
    every one of run.SCALING (at their sizes: the quick --scaling's
    parser), and refuses sizes that are not sizes; torch_bench.py's
    parser reads the same names."""
    failures = []
    good = [p[1] for p in run.SCALING]
    bad = ["ln_fwd_bwd@0x768", "ln_fwd_bwd@64", "ln_fwd_bwd@64x768x2",
           "ln_fwd_bwd@64xabc", "mlp_medium_step@1", "mlp_medium_step@8x",
           "bn1d_fwd_bwd@1x768", "bn1d_fwd_bwd@64", "bn1d_fwd_bwd@1_0x768",
           "ln_fwd_bwd@+64x768",
           "ln_fwd_bwd@\u0661\u0660x768", "ln_fwd_bwd@20000000x1",
           "bn1d_fwd_bwd@100000x1000", "mlp_medium_step@20000000",
           "copy@8", "ln_fwd@64x768", "no_such@1"]
    script = []
    for name in good:
        script += ["setup %s 1 small 0.0001" % name, "run"]
    script += ["setup %s 1 small 0.0001" % n for n in bad] + ["quit"]
    p = subprocess.run([tg_bench], input="\n".join(script) + "\n",
                       capture_output=True, text=True, env=env, timeout=600)
    replies = p.stdout.splitlines() + [""] * len(script)
    if p.returncode != 0:
        failures.append("tg_bench (scaling names) exited with %d:\n%s" % (
            p.returncode, p.stderr))
    for i, name in enumerate(good):
        setup, sample = replies[2 * i], replies[2 * i + 1]
        if not setup.startswith("ok ") or len(sample.split()) != 3:
            failures.append("%s: %r, %r" % (name, setup, sample))
    for i, name in enumerate(bad):
        if replies[2 * len(good) + i] != "unsupported":
            failures.append("%s: answered %r, want unsupported" % (
                name, replies[2 * len(good) + i]))
    if verifier:
        want = {"ln_fwd_bwd@256x768": ("ln_fwd_bwd", (256, 768)),
                "mlp_medium_step@512": ("mlp_medium_step", (512,)),
                "bn1d_fwd_bwd@2x1": ("bn1d_fwd_bwd", (2, 1)),
                "ln_fwd_bwd": ("ln_fwd_bwd", None)}
        for name, w in want.items():
            if verifier.split_scale(name) != w:
                failures.append("torch_bench split_scale(%r): %r" % (
                    name, verifier.split_scale(name)))
        for name in bad:
            try:
                verifier.split_scale(name)
                failures.append("torch_bench accepted %s" % name)
            except NotImplementedError:
                pass
    return failures


if __name__ == "__main__":
    sys.exit(main())
