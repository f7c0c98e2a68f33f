#!/usr/bin/env bash
# Instructions per thread of one run, under callgrind: the figure to compare two builds by when
# the question is the critical path. On two cores a large run is as long as its driving thread
# (the command's own, listed first), and moving work to another thread helps only if the driving
# thread's count falls by more than the others' rises; wall times on a shared machine vary by
# more than the few per cent such changes make, instruction counts do not. Callgrind runs one
# thread at a time, so the driver of a pipelined tangent, which plans while it waits for the
# reader (`Planner::help`), makes most of the plans under it: compare such runs by their total,
# or with XAIFBOOSTER_PLANNER=0 (the driver plans everything).
#
#   scripts/thread_instructions.sh BINARY MODE INPUT [ARGS...]
#
# Runs `BINARY MODE INPUT -o <scratch> ARGS...` with XAIFBOOSTER_WORKERS=0 unless the
# environment sets it. Prints one line per thread in the order they started: "thread N: M
# instructions" (N=1 is the command's thread), then the total. Needs valgrind.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
binary=$1 mode=$2 input=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
XAIFBOOSTER_WORKERS=${XAIFBOOSTER_WORKERS:-0} valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$work/run" "$binary" "$mode" "$input" -o "$work/out.xaif" "$@" \
    >/dev/null 2>"$work/valgrind.log" || { cat "$work/valgrind.log" >&2; exit 1; }
total=0
for file in "$work"/run-*; do
    thread=${file##*-}
    count=$(awk '/^summary:/ {print $2; exit}' "$file")
    printf 'thread %d: %d instructions\n' "$((10#$thread))" "$count"
    total=$((total + count))
done
printf 'total: %d instructions\n' "$total"
