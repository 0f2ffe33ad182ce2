#!/bin/sh
# tests/autograd/norm_clone_bits.sh PROGRAM - the fast LayerNorm,
# BatchNorm, tanh and softmax kernels give the same bits from their
# AVX-512 (or AVX2) clone
# and from their AVX2 clone: PROGRAM (norm_clone_bits.c) run on the CPU
# and under valgrind, which offers no AVX-512, must print the same hash.
# It first checks that the comparison can fail: PROGRAM --flip (one bit
# of one dx changed) must print another hash. Skipped (77) without
# valgrind. The plain x86-64 clone is not run here: that would take a CPU
# without AVX2.
set -u
prog=$1
command -v valgrind >/dev/null 2>&1 || { echo "valgrind not found: skipped"; exit 77; }
native=$("$prog") || { echo "FAIL: $prog failed"; exit 1; }
flipped=$("$prog" --flip) || { echo "FAIL: $prog --flip failed"; exit 1; }
if [ "$native" = "$flipped" ]; then
    echo "FAIL: one flipped bit left the hash at $native: the check cannot fail"
    exit 1
fi
emulated=$(valgrind -q --error-exitcode=99 "$prog") || {
    echo "FAIL: $prog under valgrind failed"; exit 1; }
clone=default
grep -qw avx2 /proc/cpuinfo 2>/dev/null && clone=avx2
grep -qw avx512f /proc/cpuinfo 2>/dev/null && clone=avx512f
echo "on the CPU ($clone clone): $native; under valgrind (avx2 clone): $emulated"
[ "$native" = "$emulated" ] || { echo "FAIL: the clones give different bits"; exit 1; }
echo "ok: same bits"
