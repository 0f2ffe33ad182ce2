#!/usr/bin/env python3
"""check_digits_norms.py - the claim of examples/digits_norms.c, checked on
what the program measures: BatchNorm fails at small batches, the
normalisations that work per image do not.

    check_digits_norms.py --program build/examples/digits_norms --out DIR
        runs the program with --quick --no-plots (batch sizes 2 and 32,
        no norm, BatchNorm and GroupNorm, 3 seeds) into DIR and checks
        DIR/summary.csv;
    check_digits_norms.py --summary FILE
        checks a summary.csv written before;
    check_digits_norms.py --self-test
        feeds the checker tables that must fail (the direction reversed,
        GroupNorm failing too, a missing row) and one that must pass.

The rules, on the mean validation accuracy over the seeds (eval mode):
  1. BatchNorm at batch 2 is below BatchNorm at batch 32 by at least
     BN_DROP;
  2. GroupNorm at batch 2 is not below GroupNorm at batch 32 by more
     than GN_SLACK;
  3. at batch 2, GroupNorm is above BatchNorm by at least BN_DROP;
  4. BatchNorm's accuracy with batch statistics at batch 2 is below its
     accuracy with batch statistics at batch 32 (the batch of two is what
     hurts, whichever statistics the evaluation uses).
The thresholds were set from measurements of the --quick sweep (the
tutorial, docs/tutorial/09-normalisation-on-images.md, gives them), with a
margin of about half the measured effect.
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

BN_DROP = 0.05   # 5 points of accuracy
GN_SLACK = 0.03  # 3 points


def read_summary(path):
    """{(norm, batch_size): row} of summary.csv; numbers as floats."""
    table = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["norm"], int(row["batch_size"]))
            table[key] = {k: (float(v) if v not in ("", None) else None)
                          for k, v in row.items() if k != "norm"}
    return table


def check(table):
    """The list of rules the table breaks (empty when it passes)."""
    needed = [("batch", 2), ("batch", 32), ("group", 2), ("group", 32)]
    missing = [k for k in needed if k not in table]
    if missing:
        return ["summary.csv has no row for %s" % ", ".join(
            "%s at batch %d" % k for k in missing)]
    bn2, bn32 = table[("batch", 2)]["mean"], table[("batch", 32)]["mean"]
    gn2, gn32 = table[("group", 2)]["mean"], table[("group", 32)]["mean"]
    bs2 = table[("batch", 2)]["batch_stats_mean"]
    bs32 = table[("batch", 32)]["batch_stats_mean"]
    broken = []
    if not bn2 <= bn32 - BN_DROP:
        broken.append("1. BatchNorm at batch 2 (%.3f) is not %.2f below "
                      "batch 32 (%.3f)" % (bn2, BN_DROP, bn32))
    if not gn2 >= gn32 - GN_SLACK:
        broken.append("2. GroupNorm at batch 2 (%.3f) is more than %.2f "
                      "below batch 32 (%.3f)" % (gn2, GN_SLACK, gn32))
    if not gn2 >= bn2 + BN_DROP:
        broken.append("3. at batch 2 GroupNorm (%.3f) is not %.2f above "
                      "BatchNorm (%.3f)" % (gn2, BN_DROP, bn2))
    if bs2 is None or bs32 is None or not bs2 < bs32:
        broken.append("4. BatchNorm with batch statistics at batch 2 (%s) "
                      "is not below batch 32 (%s)" % (bs2, bs32))
    return broken


def report(table, broken):
    for key in sorted(table):
        row = table[key]
        extra = ""
        if row.get("batch_stats_mean") is not None:
            extra = "  batch stats %.3f" % row["batch_stats_mean"]
        print("%-8s batch %3d  mean %.3f  std %.3f%s"
              % (key[0], key[1], row["mean"], row["std"], extra))
    for b in broken:
        print("FAILED: " + b)
    if not broken:
        print("the direction holds: BatchNorm drops at batch 2, GroupNorm "
              "does not")


def self_test():
    def row(mean, bs=None):
        return {"mean": mean, "std": 0.01, "batch_stats_mean": bs}

    good = {("batch", 2): row(0.80, 0.78), ("batch", 32): row(0.95, 0.95),
            ("group", 2): row(0.94), ("group", 32): row(0.95)}
    failures = 0
    if check(good):
        print("self-test: a table with the direction was rejected: %s"
              % check(good))
        failures += 1
    reversed_bn = dict(good)
    reversed_bn[("batch", 2)], reversed_bn[("batch", 32)] = \
        good[("batch", 32)], good[("batch", 2)]
    gn_fails = dict(good)
    gn_fails[("group", 2)] = row(0.80)
    no_row = {k: v for k, v in good.items() if k != ("group", 2)}
    no_gap = dict(good)
    no_gap[("batch", 2)] = row(0.80, 0.97)
    for name, table in [("reversed BatchNorm", reversed_bn),
                        ("GroupNorm failing too", gn_fails),
                        ("a missing row", no_row),
                        ("batch statistics fine at batch 2", no_gap)]:
        if not check(table):
            print("self-test: the table with %s was accepted" % name)
            failures += 1
    # the same through the CSV reader, reversed
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "summary.csv")
        with open(path, "w") as f:
            f.write("norm,batch_size,runs,mean,std,min,max,"
                    "batch_stats_mean,batch_stats_std\n"
                    "batch,2,3,0.95,0.01,0.94,0.96,0.95,0.01\n"
                    "batch,32,3,0.80,0.01,0.79,0.81,0.78,0.01\n"
                    "group,2,3,0.94,0.01,0.93,0.95,,\n"
                    "group,32,3,0.95,0.01,0.94,0.96,,\n")
        if not check(read_summary(path)):
            print("self-test: a reversed summary.csv was accepted")
            failures += 1
    print("self-test: %s" % ("FAILED" if failures else "ok"))
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--program")
    p.add_argument("--out")
    p.add_argument("--summary")
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test()
    if a.program:
        if not a.out:
            p.error("--program needs --out")
        subprocess.run([a.program, "--quick", "--no-plots", "--out", a.out],
                       check=True)
        a.summary = os.path.join(a.out, "summary.csv")
    if not a.summary:
        p.error("give --program and --out, --summary or --self-test")
    table = read_summary(a.summary)
    broken = check(table)
    report(table, broken)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
