#!/usr/bin/env python3
"""Checks that the results in docs/performance.md are in the format
bench/run.py --doc writes (the numbers are not judged: they are one run's),
and that the check rejects a block that is not; the same for the scaling
block (bench/run.py --scaling --doc).

    doc_table_test.py DOC
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    spec = importlib.util.spec_from_file_location(
        "run", os.path.join(HERE, "run.py"))
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    with open(sys.argv[1]) as f:
        text = f.read()
    failures = ["%s: %s" % (sys.argv[1], p) for p in run.check_doc(text)]

    # Wrong blocks the check must refuse: a results row with a cell less,
    # a target with a status the script never writes, no machine line.
    lines = text.split("\n")
    header = "  ".join(run.HEADER)
    first_row = next((i + 2 for i, ln in enumerate(lines)
                      if " ".join(ln.split()) == " ".join(
                          header.split())), None)
    if first_row is None or first_row >= len(lines):
        failures.append("no results row to damage")
    else:
        cut = lines[:]
        cut[first_row] = cut[first_row].rsplit(None, 1)[0]
        bad = {"a row without its check cell": "\n".join(cut),
               "a target 'great'": text.replace("  met\n", "  great\n", 1)
               .replace("  MISSED\n", "  great\n", 1)
               .replace("  " + run.NOT_MEASURABLE + "\n", "  great\n", 1),
               # in the results block: other blocks start the same way
               "no machine line": text[:text.index(run.DOC_BEGIN)] +
               text[text.index(run.DOC_BEGIN):].replace(
                   "Measured on ", "Run on ", 1)}
        for what, t in bad.items():
            if t == text or not run.check_doc(t):
                failures.append("the check accepted %s" % what)
    failures += scaling_block_cases(run, text)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


def scaling_block_cases(run, text):
    """The scaling block: the doc's own is checked, and one made by the
    script's own writer (from made-up results: the format is checked, not
    the numbers) must pass, and its damaged copies must not."""
    failures = ["scaling: %s" % p for p in run.check_scaling_doc(text)
                if not p.startswith("scaling")] + \
        [p for p in run.check_scaling_doc(text) if p.startswith("scaling")]
    cell = {"median": 2e-4, "min": 1.9e-4, "max": 2.2e-4}
    made = [(series, size, {
        "cells": {"tapegrad": cell, "torch": cell},
        "ratios": {"torch": {"median": 0.5, "min": 0.4, "max": 0.6}},
        "contended": None if i % 2 else "busy", "check": "ok"})
        for i, (series, _, size) in enumerate(run.SCALING[:4])]
    lines = ["(the legend)", ""] + run.table_lines(
        run.SCALING_HEADER, run.scaling_rows(made))
    machine = {"cpu": "Some CPU", "cpus": 2, "openblas": None,
               "load_before": 0.5, "load_after": 0.6}
    block = run.scaling_block(machine, lines)
    a = text.index(run.SCALING_BEGIN) + len(run.SCALING_BEGIN)
    b = text.index(run.SCALING_END)

    def doc_with(blk):
        return text[:a] + "\n" + blk + "\n" + text[b:]
    good = doc_with(block)
    if run.check_scaling_doc(good):
        failures.append("scaling: the writer's own block refused: %s"
                        % run.check_scaling_doc(good))
    row = run.table_lines(run.SCALING_HEADER, run.scaling_rows(made))[2]
    bad = {
        "a row without its check cell":
            doc_with(block.replace(row, row.rsplit(None, 1)[0], 1)),
        "a ratio that is not MEDIAN [MIN MAX]":
            doc_with(block.replace("0.50 [0.40 0.60]", "0.5", 1)),
        "an unknown series": doc_with(block.replace(
            run.SCALING[0][0], "LayerNorm fwd+bwd (M, 7680)", 1)),
        "no machine line": doc_with(block.replace("Measured on ", "Run on ",
                                                  1)),
        "a machine 'busy'": doc_with(block.replace("quiet ", "busy  ", 1)),
        "no table": doc_with(block.replace("tg/torch [min max]", "ratio",
                                           1)),
        "no markers": good.replace(run.SCALING_END, "", 1),
    }
    for what, t in bad.items():
        if t == good or not run.check_scaling_doc(t):
            failures.append("scaling: the check accepted %s" % what)
    return failures


if __name__ == "__main__":
    sys.exit(main())
