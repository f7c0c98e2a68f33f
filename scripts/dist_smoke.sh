#!/usr/bin/env bash
# The binary to deploy is built unlike the tests' binaries (fat LTO, statically linked): a libc
# function that glibc's static archive leaves unresolved crashes it and nothing else (a call of
# glibc's copy_file_range wrapper did, in a change that was then dropped). This runs it on a
# large synthetic input in every mode (large enough for every large-input path: streaming,
# pipelined reading, validation alongside, the scan in halves, the routines written past the
# page cache and their blocks moved behind the head) and on a small one, each twice (the second replacing the first's output), and holds
# its outputs to the release build's, byte for byte.
#
#   scripts/dist_smoke.sh DIST_BINARY [RELEASE_BINARY]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dist=$1
release=${2:-${CARGO_TARGET_DIR:-$here/target}/release/xaifbooster}
[ -x "$dist" ] || { echo "no binary at $dist" >&2; exit 1; }
[ -x "$release" ] || { echo "no binary at $release (cargo build --release)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$here/scripts/gen_xaif.py" --mb 12 --seed 3 -o "$work/large.xaif"
python3 "$here/scripts/gen_xaif.py" --mb 0.05 --seed 4 -o "$work/small.xaif"
for input in large small; do
    for mode in identity tangent adjoint; do
        for build in dist release; do
            binary=$dist; [ "$build" = release ] && binary=$release
            # Twice, the second replacing the first's output.
            "$binary" "$mode" -q "$work/$input.xaif" -o "$work/$build.xaif"
            "$binary" "$mode" -q "$work/$input.xaif" -o "$work/$build.xaif"
        done
        cmp "$work/dist.xaif" "$work/release.xaif"
        echo "$mode of the $input input ($(stat -c %s "$work/$input.xaif") bytes): the dist and release builds agree ($(stat -c %s "$work/dist.xaif") bytes)"
    done
done
