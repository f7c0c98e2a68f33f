#!/usr/bin/env bash
# Writes scripts/symbol-order.txt: the functions the binary executes on small corpus files, in
# every mode, which `scripts/link_in_order.sh` then lays out side by side (why: there).
# Run it again after large changes; a stale list costs start-up time, never correctness.
#
#   scripts/symbol_order.sh [DIST_BINARY]
#
# Needs valgrind (callgrind lists every function a run enters) and the shared corpus
# (XAIF_SHARED, default ../shared). The binary defaults to a fresh `scripts/build_dist.sh`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
command -v valgrind > /dev/null || { echo "symbol_order.sh needs valgrind" >&2; exit 1; }
binary=${1:-$(scripts/build_dist.sh | tail -1)}
shared=${XAIF_SHARED:-$here/../shared}
[ -d "$shared/corpus" ] || { echo "no corpus under $shared (set XAIF_SHARED)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Small examples that between them have loops, branches, multi-way branches, unstructured
# control flow, calls, arrays and allocations.
examples="mini1 SeqOfLoops NestedLoops IfStatement_1 Select_1 Unstructured0 nested_calls_1
    arrayAllocation_1 speelpenning box_timestep argumentConversion_2 globalActive_3"
run=0
# A run may fail (an input a mode refuses still runs code worth listing), but it must leave a trace.
trace() {
    run=$((run + 1))
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/trace.$run" "$@" > /dev/null 2>&1 || true
    [ -s "$work/trace.$run" ] || { echo "no callgrind trace of: $*" >&2; exit 1; }
}
for example in $examples; do
    tangent_input=$shared/corpus/$example/tlm.in.xaif
    adjoint_input=$shared/corpus/$example/adm.in.xaif
    trace "$binary" tangent "$tangent_input" -o "$work/out.xaif"
    trace "$binary" adjoint "$adjoint_input" -o "$work/out.xaif"
    trace "$binary" adjoint -I "$adjoint_input" -o "$work/out.xaif"
    trace "$binary" identity "$tangent_input" -o "$work/out.xaif"
    trace "$binary" validate "$tangent_input"
done
# Every function entered (callgrind names each the first time it appears, as fn= or cfn=; a
# name it marks as a recursive call, `name'2`, is the same function), with the number of runs
# that entered it.
for trace in "$work"/trace.*; do
    sed -n -E "s/^c?fn=\([0-9]+\) (.*)$/\1/p" "$trace" | sed -E "s/'[0-9]+$//" | sort -u
done | sort | uniq -c > "$work/entered"
# Those every run enters first, then those fewer runs enter, so that one mode on one kind of input
# finds what it runs in fewer pages; among equals, the order of the binary's addresses.
{
    echo "# Functions executed on small corpus files in every mode (scripts/symbol_order.sh), those"
    echo "# most runs execute first; read by scripts/link_in_order.sh."
    nm --defined-only "$binary" | awk 'NR == FNR { runs[$2] = $1; next }
        NF == 3 && $2 ~ /^[tTwW]$/ && ($3 in runs) && !($3 in seen) { seen[$3] = 1; print runs[$3], $1, $3 }' "$work/entered" - |
        sort -k1,1nr -k2,2 | awk '{ print $3 }'
} > scripts/symbol-order.txt
echo "scripts/symbol-order.txt: $(grep -vc '^#' scripts/symbol-order.txt) functions from $run runs" >&2
