#!/bin/sh
# bench/ddp_bench.sh - one data-parallel training step with SyncBatchNorm
# (bench/ddp_step.c) at 1, 2 and 4 processes: wall time per step, the
# share of it inside MPI collectives, CPU time per step. Each count runs
# REPS times (default 3) and the fastest run is kept.
#
#   bench/ddp_bench.sh [BUILD_DIR] [--steps S] [--batch B] [--width H]
#
# BUILD_DIR (default build/) must be configured with MPI (meson finds it,
# or -Dmpi=enabled). Writes out/ddp_bench/ddp_bench.csv and prints it as a
# table. Rows with more processes than cores (nproc) are marked
# oversubscribed: there processes wait for a core, and wall times measure
# that more than the library.
set -eu
cd "$(dirname "$0")/.."
build=build
case "${1:-}" in --*|"") ;; *) build=$1; shift ;; esac
exe="$build/bench/ddp_step"
if [ ! -x "$exe" ]; then
    echo "no $exe: configure $build with MPI and run ninja -C $build" >&2
    exit 1
fi
reps=${REPS:-3}
cores=$(nproc)
out=out/ddp_bench
mkdir -p "$out"
csv="$out/ddp_bench.csv"
# Open MPI as root (containers) and with more ranks than cores
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "world,batch,width,steps,step_ms,comm_ms,comm_share,cpu_ms,oversubscribed" > "$csv"
for n in 1 2 4; do
    best=""
    for r in $(seq "$reps"); do
        line=$(mpiexec -n "$n" --oversubscribe "$exe" "$@")
        ms=$(echo "$line" | cut -d, -f5)
        if [ -z "$best" ] || awk "BEGIN { exit !($ms < $(echo "$best" | cut -d, -f5)) }"; then
            best=$line
        fi
    done
    over=no
    [ "$n" -gt "$cores" ] && over=yes
    echo "$best,$over" >> "$csv"
done
echo "$(uname -m), $cores cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
awk -F, 'NR == 1 { printf "%-9s %-6s %-6s %10s %10s %8s %10s  %s\n", "processes", "batch", "width", "step ms", "comm ms", "comm %", "CPU ms", "oversubscribed"; next }
         { printf "%-9s %-6s %-6s %10.3f %10.3f %7.1f%% %10.3f  %s\n", $1, $2, $3, $5, $6, 100 * $7, $8, $9 }' "$csv"
echo "written: $csv"
