#!/bin/sh
# Installs the Debian packages among its arguments that are not installed
# yet, saying which (as root, with apt-get; nothing is done without
# apt-get, or when TG_NO_INSTALL is set). Shared by scripts/quickstart.sh
# and scripts/bench.sh:
#
#   ./scripts/install-missing.sh gcc meson ninja-build ...
#
# A package is missing when dpkg does not list it as installed, so running
# this again is cheap.
set -eu

missing=""
for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    exit 0
fi
if [ -n "${TG_NO_INSTALL:-}" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "not installed (TG_NO_INSTALL set, or no apt-get):$missing"
    exit 0
fi
echo "installing:$missing"
apt-get update -q
# the list is split into package names on purpose
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
