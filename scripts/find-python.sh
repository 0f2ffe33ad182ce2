#!/bin/sh
# Prints the path of a Python 3 interpreter that can import NumPy.
# Debian's python3-numpy lives under /usr/bin/python3; the python3 first on
# PATH may be another interpreter without it, so that one is tried last.
for py in /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
    if [ -n "$py" ] && [ -x "$py" ] && "$py" -c 'import numpy' 2>/dev/null; then
        echo "$py"
        exit 0
    fi
done
echo "no python3 with NumPy found; install it with: apt-get install python3-numpy" >&2
exit 1
