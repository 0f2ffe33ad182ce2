#!/bin/sh
# tests/tsan/expect-race.sh PROGRAM ARGS... - passes only when PROGRAM,
# built with ThreadSanitizer, ends with its status for a report (66) after
# reporting a data race with a frame in the library's random number code
# (tensor/random.c): the check that the ThreadSanitizer run can fail.
out=$("$@" 2>&1)
status=$?
if [ "$status" -ne 66 ]; then
    printf '%s\n' "$out" | tail -n 40
    echo "expect-race: exit status $status, expected 66 (a ThreadSanitizer report)"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -q 'WARNING: ThreadSanitizer: data race'; then
    printf '%s\n' "$out" | tail -n 40
    echo "expect-race: no data race reported"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -q 'tensor/random\.c'; then
    printf '%s\n' "$out" | tail -n 40
    echo "expect-race: the race reported is not in tensor/random.c"
    exit 1
fi
printf '%s\n' "$out" | grep -m1 -A3 'WARNING: ThreadSanitizer: data race'
echo "expect-race: ThreadSanitizer reported the race, as it must"
