#!/usr/bin/env python3
"""Checks that the results in docs/performance.md are in the format
bench/run.py --doc writes (the numbers are not judged: they are one run's),
and that the check rejects a block that is not.

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
               "no machine line": text.replace("Measured on ", "Run on ", 1)}
        for what, t in bad.items():
            if t == text or not run.check_doc(t):
                failures.append("the check accepted %s" % what)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
