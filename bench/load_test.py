#!/usr/bin/env python3
"""examples/train_mlp on an idle machine and beside busy processes.

    load_test.py [--exe build/examples/train_mlp] [--runs 5] [--spinners 1]
                 [--env K=V ...] [-- ARGS for train_mlp]

Runs train_mlp --runs times alone, then --runs times while --spinners
processes spin on the CPU (started here and ended here), at the default
thread count (TG_NUM_THREADS and OMP_NUM_THREADS removed from the
environment). Prints the wall and CPU time (user + system, of train_mlp
and its threads) of each set as min / median / max, and the ratio of the
medians, loaded / idle. docs/performance.md ("Threads on a shared
machine") has the results and what they decided.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def one_run(argv, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + \
        (after.ru_stime - before.ru_stime)
    return wall, cpu


def runs(argv, env, n):
    return [one_run(argv, env) for _ in range(n)]


def spread(values):
    return "%.3f / %.3f / %.3f s" % (min(values), statistics.median(values),
                                     max(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default="build/examples/train_mlp")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--spinners", type=int, default=1,
                    help="busy processes beside the loaded runs")
    ap.add_argument("--env", action="append", default=[], metavar="K=V",
                    help="set in train_mlp's environment (e.g. "
                         "TG_NUM_THREADS=1, to compare)")
    ap.add_argument("args", nargs="*", help="train_mlp's own options")
    a = ap.parse_args()
    env = dict(os.environ)
    for k in ("TG_NUM_THREADS", "OMP_NUM_THREADS", "OMP_DYNAMIC",
              "OMP_WAIT_POLICY"):
        env.pop(k, None)
    env.update(kv.split("=", 1) for kv in a.env)
    with tempfile.TemporaryDirectory() as out:
        argv = [a.exe, "--no-plots", "--out", out] + a.args
        one_run(argv, env)  # warm the page cache; not counted
        idle = runs(argv, env, a.runs)
        spinners = [subprocess.Popen(
            [sys.executable, "-c", "while True: pass"])
            for _ in range(a.spinners)]
        try:
            time.sleep(1.5)  # the load average and the scheduler see them
            loaded = runs(argv, env, a.runs)
        finally:
            for p in spinners:
                p.kill()
                p.wait()
    print("train_mlp %s, %d runs each, %s, %d CPUs" % (
        " ".join(a.args) or "(default options)", a.runs,
        " ".join(a.env) or "default thread count", os.cpu_count() or 1))
    print("%-28s %-28s %s" % ("", "wall min / median / max",
                              "CPU min / median / max"))
    for name, r in (("idle", idle),
                    ("beside %d spinning process%s" % (
                        a.spinners, "" if a.spinners == 1 else "es"),
                     loaded)):
        print("%-28s %-28s %s" % (name, spread([w for w, _ in r]),
                                  spread([c for _, c in r])))
    wi = statistics.median(w for w, _ in idle)
    wl = statistics.median(w for w, _ in loaded)
    ci = statistics.median(c for _, c in idle)
    cl = statistics.median(c for _, c in loaded)
    print("loaded / idle: wall %.2fx, CPU %.2fx (medians)" % (wl / wi,
                                                             cl / ci))
    return 0


if __name__ == "__main__":
    sys.exit(main())
