#!/usr/bin/env python3
"""Runs an exercise grader that must fail, and checks that it fails well.

    expect_grade_failure.py stub  GRADER   # built against an untouched stub
    expect_grade_failure.py wrong GRADER   # built against a wrong answer
    expect_grade_failure.py wrong GRADER --every-failure-says PHRASE

A grader is a Criterion program (tests/exercises/grade_*.c). Both modes
require a non-zero exit, at least one test, no crashed test and no
sanitizer report. "stub" also requires every test to fail with the "not
implemented yet" message; "wrong" requires at least one failing test and
no "not implemented yet" (the wrong answer is implemented, just wrong),
every failure being a failed assertion of the grader (a test that exits
on its own does not count as rejecting the answer). With
--every-failure-says, every failing test's message must contain PHRASE:
the grader gives the most specific diagnosis first, whichever test the
student reads.
Exits 0 when the grader failed as expected, 1 otherwise, printing why.
"""
import re
import subprocess
import sys


def main():
    args = sys.argv[1:]
    phrase = None
    if len(args) == 4 and args[2] == "--every-failure-says":
        phrase = args[3]
        args = args[:2]
    if len(args) != 2 or args[0] not in ("stub", "wrong"):
        sys.exit(__doc__)
    mode, grader = args
    run = subprocess.run([grader, "--jobs=1"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, check=False)
    out = run.stdout
    synthesis = re.search(r"Tested: (\d+) \| Passing: (\d+) \| "
                          r"Failing: (\d+) \| Crashing: (\d+)", out)
    problems = []
    if run.returncode == 0:
        problems.append("the grader passed")
    if synthesis is None:
        problems.append("no Criterion summary line (did the grader crash "
                        "before its tests ran?)")
    else:
        tested, passing, failing, crashing = map(int, synthesis.groups())
        if tested == 0:
            problems.append("the grader ran no tests")
        if crashing:
            problems.append(f"{crashing} test(s) crashed")
        if failing == 0:
            problems.append("no test failed")
        stubbed = out.count("is not implemented yet")
        if mode == "stub" and (passing or stubbed < failing):
            problems.append(f"{passing} test(s) passed and {stubbed} of "
                            f"{failing} failure(s) say 'not implemented "
                            "yet': every test must stop at the stub")
        if mode == "wrong" and stubbed:
            problems.append("the wrong answer reached a stub")
        # Each failure must be a failed assertion of the grader, with its
        # message; a test that ended by exit(1) on its own has none.
        asserted = out.count("Assertion Failed")
        if asserted < failing:
            problems.append(f"only {asserted} of {failing} failure(s) come "
                            "from a failed assertion")
        if phrase is not None:
            problems += phrase_problems(out, phrase)
    if re.search(r"ERROR: (Address|Leak)Sanitizer|runtime error:", out):
        problems.append("a sanitizer reported an error")
    if problems:
        print(out)
        print(f"expect_grade_failure ({mode}) {grader}: " +
              "; ".join(problems))
        return 1
    print(f"{grader} failed as expected ({mode}):")
    print("\n".join(line for line in out.splitlines()
                    if "Synthesis" in line or "[FAIL]" in line))
    return 0


def phrase_problems(out, phrase):
    """The failing tests of a Criterion output whose messages (the lines
    before their [FAIL] line) do not contain phrase."""
    problems, message = [], []
    for line in out.splitlines():
        failed = re.search(r"\[FAIL\] (\S+): \(", line)
        if failed:
            if phrase not in " ".join(message):
                problems.append(f"{failed.group(1)} fails without saying "
                                f"{phrase!r} first")
            message = []
        elif line.startswith("[----]"):
            message.append(line[6:].strip())
    return problems


if __name__ == "__main__":
    sys.exit(main())
