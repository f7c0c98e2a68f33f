#!/usr/bin/env bash
# The end of a streamed run, where the routines, written behind room for the head, are moved
# behind it: milliseconds from the output's last `fallocate` (just before head and move begin)
# to its rename (head, move and tail written), and from the rename to the process's exit (the
# replaced output's removal, the exit itself). Whole runs' wall times on a shared
# two-core machine move by more than this part changes; these two system calls, traced with
# seccomp so that no other call stops the process, do not.
#
#   scripts/end_phase.sh [-n ROUNDS] [-m MODE] INPUT BINARY...
#
# Runs each BINARY in turn, ROUNDS times (default 8), in MODE (default tangent) on INPUT,
# writing to one scratch output that each run replaces, and prints per binary the sorted
# figures and their medians. Alternating binaries makes each free an output the other wrote
# (pages of other sizes): run one binary on its own to see its steady state. Needs strace 5.3
# or later (--seccomp-bpf).
set -euo pipefail
rounds=8 mode=tangent
while getopts "n:m:" option; do
    case $option in
        n) rounds=$OPTARG ;;
        m) mode=$OPTARG ;;
        *) sed -n '2,15p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
input=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for _ in $(seq "$rounds"); do
    for binary in "$@"; do
        strace --seccomp-bpf -f -ttt -e trace=fallocate,renameat2,rename,exit_group -o "$work/trace" \
            "$binary" "$mode" "$input" -o "$work/out.xaif" >/dev/null 2>"$work/stderr" ||
            { echo "failed: $binary $mode $input" >&2; cat "$work/stderr" >&2; exit 1; }
        # The end's allocation is the last `fallocate` (the routines' come before it).
        awk -v binary="$binary" '
            $3 ~ /^fallocate\(/ { allocated = $2 }
            $3 ~ /^rename/ { renamed = $2 }
            $3 ~ /^exit_group\(/ { exited = $2 }
            END {
                if (allocated == "" || renamed == "" || exited == "") {
                    print binary ": no end traced (a small input, or not streamed?)" > "/dev/stderr"
                    exit 1
                }
                printf "%s %.1f %.1f\n", binary, (renamed - allocated) * 1000, (exited - renamed) * 1000
            }' "$work/trace"
    done
done >"$work/figures"
for binary in "$@"; do
    awk -v binary="$binary" '$1 == binary { print $2, $3 }' "$work/figures" >"$work/one"
    awk -v binary="$binary" '
        { copy[NR] = $1; after[NR] = $2 }
        END {
            n = asort_numbers(copy); asort_numbers(after)
            printf "%s\n  fallocate to rename:", binary
            for (i = 1; i <= NR; i++) printf " %.1f", copy[i]
            printf "  (median %.1f ms)\n  rename to exit:     ", copy[int((NR + 1) / 2)]
            for (i = 1; i <= NR; i++) printf " %.1f", after[i]
            printf "  (median %.1f ms)\n", after[int((NR + 1) / 2)]
        }
        # An insertion sort (POSIX awk has no asort).
        function asort_numbers(a,    i, j, v) {
            for (i = 2; i <= NR; i++) { v = a[i]; for (j = i - 1; j >= 1 && a[j] > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
            return NR
        }' "$work/one"
done
