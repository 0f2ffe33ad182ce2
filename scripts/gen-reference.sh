#!/bin/sh
# Regenerates the NumPy reference fixtures in tests/reference/ (or in the
# folder given as $1). The fixtures are committed; running this again
# reproduces them byte for byte (CI checks that).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py=$("$here/find-python.sh")
exec "$py" "$here/reference/generate.py" "${1:-$here/../tests/reference}"
