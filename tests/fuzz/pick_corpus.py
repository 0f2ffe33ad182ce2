#!/usr/bin/env python3
"""Adds to a committed seed corpus the few inputs of a fuzzing run that
reach the most code the seeds do not.

    python3 tests/fuzz/pick_corpus.py FUZZER SEEDS RUN [--count N]

FUZZER is a libFuzzer binary (build-fuzz/tests/fuzz/fuzz_shapes), SEEDS
the committed folder (tests/fuzz/corpus/shapes), RUN the folder the run
grew. Each input's covered edges are measured alone (one libFuzzer merge
per input, counters off), then inputs are picked greedily, most new edges
first, and copied into SEEDS as merged-<sha1 prefix>. libFuzzer's own
-merge=1 keeps every input that adds a feature, hundreds of files; this
keeps the corpus to a few dozen. Standard library only.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import tempfile


def edges(fuzzer, path, tmp):
    """The set of edges path covers, by a merge of that one input."""
    one, out = os.path.join(tmp, "one"), os.path.join(tmp, "out")
    ctl = os.path.join(tmp, "ctl")
    for d in (one, out):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    if os.path.exists(ctl):
        os.remove(ctl)
    shutil.copy(path, one)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1")
    subprocess.run([fuzzer, "-merge=1", "-use_counters=0",
                    "-merge_control_file=" + ctl, out, one],
                   env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    found = set()
    if not os.path.exists(ctl): # libFuzzer skips an empty input
        return found
    with open(ctl) as f:
        for line in f:
            if line.startswith("COV "):
                found |= set(int(x) for x in line.split()[2:])
    return found


def files(folder):
    return [os.path.join(folder, n) for n in sorted(os.listdir(folder))
            if not n.startswith(".") and not n.startswith("README")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fuzzer")
    ap.add_argument("seeds")
    ap.add_argument("run")
    ap.add_argument("--count", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        have = set()
        for p in files(args.seeds):
            have |= edges(args.fuzzer, p, tmp)
        print("the seeds cover %d edges" % len(have))
        cov = {p: edges(args.fuzzer, p, tmp) for p in files(args.run)}
    for _ in range(args.count):
        best = max(cov, key=lambda p: (len(cov[p] - have),
                                       -os.path.getsize(p)), default=None)
        if best is None or not cov[best] - have:
            break
        gain = cov.pop(best) - have
        have |= gain
        with open(best, "rb") as f:
            data = f.read()
        name = "merged-" + hashlib.sha1(data).hexdigest()[:12]
        with open(os.path.join(args.seeds, name), "wb") as f:
            f.write(data)
        print("%s: +%d edges (%d in all)" % (name, len(gain), len(have)))


if __name__ == "__main__":
    main()
