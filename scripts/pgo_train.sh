#!/usr/bin/env bash
# The runs a profile-guided dist build learns from (scripts/build_dist.sh): an instrumented
# binary counts, in every run, how often each branch and function is taken, and the final build
# lays out and inlines code by those counts.
#
# What it runs is what the binary is measured on: a large synthetic input (4 MiB: the streaming,
# pipelined and moved-routines paths) in identity, tangent and adjoint mode, which dominates the
# counts of the hot loops; and small files one process each (start-up, the whole-document
# path): the crate's own test inputs and, where the shared corpus is beside the checkout
# (XAIF_SHARED, default ../shared), every fourth of its examples. Runs that refuse their input
# still count (an input a mode refuses runs code too); a binary that crashes does not train.
#
#   scripts/pgo_train.sh INSTRUMENTED_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
binary=$1
[ -x "$binary" ] || { echo "pgo_train.sh: no binary at $binary" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The instrumented binary writes its counts where it was built to (-Cprofile-generate=DIR);
# a LLVM_PROFILE_FILE of the caller's would send them elsewhere.
unset LLVM_PROFILE_FILE

# Exit status 1 is a refused input or an unwritable output, which a small file may give;
# anything else (a crash, a signal, a usage error) fails the training.
run() {
    local status=0
    "$binary" "$@" > /dev/null 2>&1 || status=$?
    if [ "$status" -gt 1 ]; then
        echo "pgo_train.sh: '$*' exited with status $status" >&2
        exit 1
    fi
}

# The large input must go through: its runs are most of the counts, and those of a refusal
# would teach the build the wrong paths.
python3 "$here/scripts/gen_xaif.py" --mb 4 --seed 1 -o "$work/large.xaif"
for mode in identity tangent adjoint; do
    "$binary" "$mode" -q "$work/large.xaif" -o "$work/out.xaif" ||
        { echo "pgo_train.sh: $mode of the 4 MiB input failed" >&2; exit 1; }
done

small=()
while IFS= read -r file; do
    small+=("$file")
done < <(find "$here/testdata/examples" "$here/testdata/tangent" "$here/testdata/adjoint" \
    "$here/testdata/type_change" "$here/testdata/analysis" "$here/testdata/validate" -name '*.xaif' | sort)
shared=${XAIF_SHARED:-$here/../shared}
if [ -d "$shared/corpus" ]; then
    n=0
    for example in "$shared"/corpus/*/; do
        n=$((n + 1))
        if [ $((n % 4)) -eq 0 ]; then
            small+=("$example/tlm.in.xaif" "$example/adm.in.xaif")
        fi
    done
fi
for file in "${small[@]}"; do
    run tangent -q "$file" -o "$work/out.xaif"
    run adjoint -q "$file" -o "$work/out.xaif"
    run adjoint -q -I "$file" -o "$work/out.xaif"
    run validate -q "$file"
done
echo "pgo_train.sh: 3 runs on a 4 MiB input, ${#small[@]} small files in 4 modes each" >&2
