"""The makemore part 3 training step, tapegrad against PyTorch, in one run.

Both sides run the lecture's code: tapegrad's examples/makemore/part3_mlp
and PyTorch 1.13's scripts/reference/torch_makemore_part3.py --time, each
at 1 thread (TG_NUM_THREADS=1, torch.set_num_threads(1)), as separate
processes, alternately. What is measured is CPU time (user + system, from
the kernel's accounting of the finished child), not wall time, so that
another job on the machine changes the numbers less.

Per-step time without the start-up (reading names.txt, building the data
sets) and the evaluation after training: each side runs SHORT and then
LONG steps, --repeats times, and each LONG run gives a time per step

    (cpu(LONG steps) - least cpu(SHORT steps)) / (LONG - SHORT),

against the least disturbed of that side's SHORT runs, after one
unmeasured SHORT run a side. Start-up varies
more than training: its first touch of fresh memory can take a second of
system time on one run and not the next (seen on a virtual machine whose
host backs fresh 2 MiB pages on demand), and a SHORT run is mostly
start-up. The table gives min, median and max per side, and the ratio of
the medians (PyTorch / tapegrad: above 1, tapegrad is faster). Where
PyTorch does not import, only tapegrad's side runs.

Usage (from the repository, after a build):
    /usr/bin/python3 bench/makemore_part3.py --exe build/examples/part3_mlp
    ... --short 500 --long 5500 --repeats 5    (the defaults)
    ... --smoke     (tiny counts and 500 words: checks that it runs)
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_seconds(cmd, env):
    """Runs cmd to the end and returns the CPU seconds it used."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    proc.stdout.close()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s failed:\n%s%s" % (" ".join(cmd), out, err))
    return usage.ru_utime + usage.ru_stime


def tapegrad_cmd(exe, steps, words, out):
    cmd = [exe, "--steps", str(steps), "--print-every", "100000000",
           "--no-plots", "--out", out]
    if words:
        cmd += ["--words", str(words)]
    return cmd


def torch_cmd(steps):
    return ["/usr/bin/python3",
            os.path.join(ROOT, "scripts", "reference",
                         "torch_makemore_part3.py"),
            "--time", str(steps)]


def torch_available():
    return subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                          capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default=os.path.join(ROOT, "build", "examples",
                                                  "part3_mlp"))
    ap.add_argument("--short", type=int, default=500)
    ap.add_argument("--long", type=int, default=5500)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--smoke", action="store_true",
                    help="10 and 30 steps, 500 words, once, tapegrad only")
    args = ap.parse_args()
    words = 0
    with_torch = torch_available()
    if args.smoke:
        args.short, args.long, args.repeats, words = 10, 30, 1, 500
        with_torch = False
    if args.long <= args.short:
        sys.exit("--long must be more than --short")
    env = dict(os.environ, TG_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    shorts = {"tapegrad": [], "PyTorch": []}
    longs = {"tapegrad": [], "PyTorch": []}
    with tempfile.TemporaryDirectory() as out:
        # one unmeasured short run a side first: the first runs of a series
        # took the most start-up time (fresh memory, cold files)
        if not args.smoke:
            cpu_seconds(tapegrad_cmd(args.exe, args.short, words, out), env)
            if with_torch:
                cpu_seconds(torch_cmd(args.short), env)
        for r in range(args.repeats):
            sides = [("tapegrad", lambda n: tapegrad_cmd(args.exe, n, words,
                                                         out))]
            if with_torch:
                sides.append(("PyTorch", torch_cmd))
            if r % 2 == 1:
                sides.reverse()  # alternate which side goes first
            for name, make in sides:
                shorts[name].append(cpu_seconds(make(args.short), env))
                longs[name].append(cpu_seconds(make(args.long), env))
            print("repeat %d/%d: %s" % (
                r + 1, args.repeats,
                ", ".join("%s %.2f s and %.2f s" % (k, shorts[k][-1], v[-1])
                          for k, v in longs.items() if v)), flush=True)
    per_step = {k: [(t - min(shorts[k])) / (args.long - args.short)
                    for t in v] for k, v in longs.items()}
    print()
    print("makemore part 3 training step (batch 32, 1 thread, CPU time per "
          "step over %d steps, %d repeats)" % (args.long - args.short,
                                              args.repeats))
    print("%-9s %9s %9s %9s" % ("", "min ms", "median ms", "max ms"))
    for name, v in per_step.items():
        if v:
            print("%-9s %9.4f %9.4f %9.4f" % (name, 1e3 * min(v),
                                              1e3 * statistics.median(v),
                                              1e3 * max(v)))
    if per_step["PyTorch"]:
        ratio = (statistics.median(per_step["PyTorch"]) /
                 statistics.median(per_step["tapegrad"]))
        print("ratio PyTorch / tapegrad (medians): %.2fx" % ratio)
        # On a busy machine even CPU time moves; the spread says how much.
        spread = max(max(v) / min(v) for v in per_step.values())
        if spread > 1.5:
            print("note: samples spread over %.1fx: the machine was busy; "
                  "do not read the ratio as a measurement" % spread)
    elif not args.smoke:
        print("(PyTorch did not import: apt-get install python3-torch)")


if __name__ == "__main__":
    main()
