#!/usr/bin/env python3
"""cpu_time.py - CPU time per iteration of one bench workload, for several
builds of tg_bench side by side (and PyTorch's torch_bench.py), on one
thread.

    cpu_time.py --workload mlp_tiny_step --rounds 15 \\
        --tg before=/path/to/old/tg_bench --tg after=build/bench/tg_bench \\
        [--tg-env debug=TG_DEBUG=1] [--torch]

Each contender is one process speaking bench/tg_bench.c's line protocol
(setup, run, quit), set up once with the workload at one thread. Then the
contenders take turns, one sample each, the order rotated every round; a
sample is the CPU time (every thread's, from the scheduler's count in
/proc/PID/task/*/schedstat) the process spent answering one "run",
divided by its iteration count. The first
two rounds are warm-up and dropped. Prints min / median / max per
contender in microseconds, and each one's median over the first's.

CPU time rather than wall time: on a machine shared with other work, a
process that waits for a core is not charged for the wait.
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_seconds(pid):
    """CPU time of every thread of pid, in seconds: the scheduler's own
    count in nanoseconds (/proc/PID/task/TID/schedstat, first field), as
    utime and stime in /proc/PID/stat come in ticks of 10 ms."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return total * 1e-9


def is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def numpy_python():
    """The interpreter that has NumPy (and Debian's torch):
    scripts/find-python.sh's answer, else this one."""
    r = subprocess.run(["sh", os.path.join(HERE, "..", "scripts",
                                           "find-python.sh")],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else sys.executable


class Contender:
    def __init__(self, name, argv, env):
        self.name = name
        e = dict(os.environ, OMP_NUM_THREADS="1", TG_NUM_THREADS="1",
                 OPENBLAS_NUM_THREADS="1", **env)
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=e)
        self.samples = []

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def setup(self, workload, seconds):
        answer = self.ask("setup %s 1 full %g" % (workload, seconds))
        if not answer.startswith("ok "):
            sys.exit("%s: setup answered %r" % (self.name, answer))
        self.iters = int(answer.split()[1])

    def sample(self):
        before = cpu_seconds(self.p.pid)
        answer = self.ask("run")
        after = cpu_seconds(self.p.pid)
        # "WALL CPU FAULTS" per unit: numbers, or the protocol went wrong
        if not answer or not all(is_number(v) for v in answer.split()):
            sys.exit("%s: run answered %r" % (self.name, answer))
        return (after - before) / self.iters

    def quit(self):
        self.ask("quit")
        self.p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="mlp_tiny_step")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--seconds", type=float, default=1.0,
                    help="wall-clock length of one sample")
    ap.add_argument("--tg", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--tg-env", action="append", default=[],
                    metavar="NAME=VAR=VALUE",
                    help="another contender: the first --tg program with "
                         "VAR=VALUE in its environment")
    ap.add_argument("--torch", action="store_true")
    args = ap.parse_args()
    cs = []
    for spec in args.tg:
        name, path = spec.split("=", 1)
        cs.append(Contender(name, [path], {}))
    for spec in args.tg_env:
        name, var, value = spec.split("=", 2)
        cs.append(Contender(name, [args.tg[0].split("=", 1)[1]],
                            {var: value}))
    if args.torch:
        cs.append(Contender("pytorch", [numpy_python(),
                                        os.path.join(HERE, "torch_bench.py"),
                                        "--backend", "torch"], {}))
    for c in cs:
        c.setup(args.workload, args.seconds)
    for r in range(args.rounds + 2):
        k = r % len(cs)
        for c in cs[k:] + cs[:k]:
            s = c.sample()
            if r >= 2:
                c.samples.append(s)
    first = statistics.median(cs[0].samples)
    print("%s, 1 thread, CPU time per iteration, %d rounds (us)"
          % (args.workload, args.rounds))
    print("%-10s %9s %9s %9s %8s" % ("", "min", "median", "max",
                                     "/" + cs[0].name))
    for c in cs:
        m = statistics.median(c.samples)
        print("%-10s %9.2f %9.2f %9.2f %8.3f"
              % (c.name, min(c.samples) * 1e6, m * 1e6,
                 max(c.samples) * 1e6, m / first))
    for c in cs:
        c.quit()


if __name__ == "__main__":
    main()
