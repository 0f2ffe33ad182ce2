#!/bin/sh
# Quick start, step 1: installs what is missing (Debian 12, as root), builds
# tapegrad into build/ and runs the main demo: a toy MLP trained on spirals
# without normalisation, with BatchNorm and with LayerNorm, leaving its logs
# and plots in out/train_mlp/. Arguments are passed on to the demo
# (./scripts/quickstart.sh --help lists them).
#
# Packages are installed only when missing, so running this again is cheap.
# Set TG_NO_INSTALL=1 to skip the package step (e.g. without root).
set -eu
cd "$(dirname "$0")/.."

packages="gcc pkg-config meson ninja-build libcriterion-dev python3-numpy"
# nn/digits.c reads data/digits.csv.gz with zlib
packages="$packages zlib1g-dev"
# The demo's plots need gnuplot with the pngcairo terminal; any Debian
# gnuplot package has it, gnuplot-nox is the one without a GUI.
command -v gnuplot >/dev/null 2>&1 || packages="$packages gnuplot-nox"

missing=""
for p in $packages; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ] && [ -z "${TG_NO_INSTALL:-}" ]; then
    echo "installing:$missing"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
fi

if [ ! -f build/build.ninja ]; then
    meson setup build
fi
ninja -C build

echo
echo "== examples/train_mlp =="
./build/examples/train_mlp "$@"
