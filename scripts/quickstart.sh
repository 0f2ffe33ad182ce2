#!/bin/sh
# Quick start, step 1: installs what is missing (Debian 12, as root), builds
# tapegrad into build/ and runs the main demo: a toy MLP trained on spirals
# without normalisation, with BatchNorm and with LayerNorm, leaving its logs
# and plots in out/train_mlp/. Arguments are passed on to the demo
# (./scripts/quickstart.sh --help lists them).
#
# Packages are installed only when missing (scripts/install-missing.sh),
# so running this again is cheap.
# Set TG_NO_INSTALL=1 to skip the package step (e.g. without root).
set -eu
cd "$(dirname "$0")/.."

packages="gcc pkg-config meson ninja-build libcriterion-dev python3-numpy"
# nn/digits.c reads data/digits.csv.gz with zlib
packages="$packages zlib1g-dev"
# The demo's plots need gnuplot with the pngcairo terminal; any Debian
# gnuplot package has it, gnuplot-nox is the one without a GUI.
command -v gnuplot >/dev/null 2>&1 || packages="$packages gnuplot-nox"
# examples/autograd_graph renders the autograd graph with Graphviz's dot.
command -v dot >/dev/null 2>&1 || packages="$packages graphviz"
./scripts/install-missing.sh $packages

if [ ! -f build/build.ninja ]; then
    meson setup build
fi
ninja -C build

echo
echo "== examples/train_mlp =="
./build/examples/train_mlp "$@"
