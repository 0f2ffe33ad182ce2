#!/usr/bin/env python3
"""check_rank_failure.py - a failure on one rank ends every rank.

examples/ddp_train on 2 processes with an output folder rank 0 cannot
create (a path under a regular file): rank 0 fails alone, before the
first step. Every rank must then stop with an error, promptly, instead of
waiting for rank 0 in its next collective (the program agrees on its
status with one all-reduce after each part that one rank does alone).
Checked: mpiexec ends within the time limit, with a nonzero status, and
rank 0 said why. The negative control: a run that can write its output
must exit 0, so a program that always fails does not pass.

usage: check_rank_failure.py MPIEXEC DDP_TRAIN OUTDIR
"""
import os
import subprocess
import sys

LIMIT = 60  # seconds; a run of 1 epoch takes about 1 s


def run(mpiexec, exe, out):
    argv = [mpiexec, "-n", "2", "--oversubscribe", exe, "--epochs", "1",
            "--no-plots", "--out", out]
    try:
        r = subprocess.run(argv, capture_output=True, text=True,
                           timeout=LIMIT)
    except subprocess.TimeoutExpired:
        return None, ""
    return r.returncode, r.stdout + r.stderr


def main():
    mpiexec, exe, outdir = sys.argv[1:4]
    os.makedirs(outdir, exist_ok=True)
    blocker = os.path.join(outdir, "a_file")
    with open(blocker, "w") as f:
        f.write("not a folder\n")
    print("1..2")
    rc, text = run(mpiexec, exe, os.path.join(blocker, "out"))
    ok = rc is not None and rc != 0 and "cannot create the folder" in text
    why = ("still running after %d s: the other rank waits for rank 0" %
           LIMIT if rc is None else "exit status %d" % rc)
    print("%s 1 - rank 0 cannot write its output: every rank stops (%s)"
          % ("ok" if ok else "not ok", why))
    if not ok:
        print("# " + text.replace("\n", "\n# "))
    rc, text = run(mpiexec, exe, os.path.join(outdir, "writable"))
    good = rc == 0
    print("%s 2 - control: a writable output folder, exit status %s"
          % ("ok" if good else "not ok", rc))
    if not good:
        print("# " + text.replace("\n", "\n# "))
    return 0 if ok and good else 1


if __name__ == "__main__":
    sys.exit(main())
