#!/bin/sh
# Benchmarks tapegrad against PyTorch and NumPy (docs/performance.md):
#
#   ./scripts/bench.sh [--quick] [--reps N] [--threads 1,2] [--only NAME...]
#   ./scripts/bench.sh --scaling [--quick] [--reps N]
#
# --scaling measures the scaling table instead: tapegrad / PyTorch at 1
# thread over a range of sizes (out/bench/scaling.png; --doc MD writes it
# into docs/performance.md's scaling block).
#
# Builds the library (-O2, as the Quick start) into build-bench/ (with OpenBLAS for
# matmul when it is installed; never touches build/), then runs
# bench/run.py, which prints the table and the targets and writes CSV and
# a chart into out/bench/. --quick takes under a minute, a full run a few.
#
# Missing packages it needs are installed first, saying so (Debian, as
# root, with scripts/install-missing.sh; TG_NO_INSTALL=1 skips that): meson, ninja, gcc, NumPy, OpenBLAS
# and gnuplot. PyTorch is used when it imports; it is not installed here
# (apt-get install python3-torch: several hundred MB).
set -eu
cd "$(dirname "$0")/.."

packages="gcc pkg-config meson ninja-build python3-numpy libopenblas-dev"
command -v gnuplot >/dev/null 2>&1 || packages="$packages gnuplot-nox"
./scripts/install-missing.sh $packages

py=$(./scripts/find-python.sh)

# OpenBLAS when pkg-config finds it: the matmul row then measures it, and
# the matmul_portable row the C kernel (TG_KERNELS_PORTABLE), in the same run.
openblas=disabled
if pkg-config --exists openblas 2>/dev/null; then
    openblas=enabled
fi
# The default build type (-O2), as the Quick start builds: GCC 12's -O3
# made the LayerNorm kernels twice slower here.
if [ -f build-bench/build.ninja ]; then
    meson configure build-bench -Dbuildtype=debugoptimized \
        -Dopenblas=$openblas >/dev/null
else
    meson setup build-bench -Dtests=disabled -Dopenblas=$openblas >/dev/null
fi
echo "building build-bench/ (-O2, OpenBLAS $openblas)"
if ! log=$(ninja -C build-bench bench/tg_bench 2>&1); then
    echo "$log"
    exit 1
fi

exec "$py" bench/run.py --tg-bench build-bench/bench/tg_bench --python "$py" "$@"
