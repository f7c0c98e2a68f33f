#!/usr/bin/env bash
# Times xaifbooster against the original C++ engine on the same machine, in the same run: the
# tangent and adjoint of a large synthetic input (best of RUNS, peak memory beside), and one
# process per corpus tangent input against as many /bin/true. Nothing of the original engine is
# part of this repository: build it yourself (github:sriharikrishna/xaifBooster with the Angel
# library of github:dorugeber/OpenAD; Debian's libxerces-c-dev and libboost-graph-dev; -O2;
# g++ 12 needs -std=gnu++11 instead of -ansi, and Angel a `using boost::tie;` with Boost 1.74)
# and give its two drivers here.
#
#   scripts/compare_original.sh ORIGINAL_TANGENT_DRIVER ORIGINAL_ADJOINT_DRIVER [SIZE_MB]
#
# Environment: XAIFBOOSTER (our binary; default the release build), XAIF_SHARED (default
# ../shared: the catalogue, the schema the original needs with -s, the corpus), RUNS (default 3).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
original_tangent=$1
original_adjoint=$2
mb=${3:-16}
ours=${XAIFBOOSTER:-${CARGO_TARGET_DIR:-$here/target}/release/xaifbooster}
shared=${XAIF_SHARED:-$here/../shared}
runs=${RUNS:-3}
catalogue=$shared/xaif/intrinsics/inlinable_intrinsics.xaif
schema=$shared/xaif/schema
for binary in "$ours" "$original_tangent" "$original_adjoint"; do
    [ -x "$binary" ] || { echo "no binary at $binary" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=timing.sh
. "$here/scripts/timing.sh"
input=$work/synthetic_$mb.xaif
python3 "$here/scripts/gen_xaif.py" --mb "$mb" --seed 1 -o "$input"
bytes=$(stat -c %s "$input")

printf '%-8s %-9s %9s %9s %9s %11s %9s\n' size mode original ours speed-up 'orig MiB' 'ours MiB'
for mode in tangent adjoint; do
    driver=$original_tangent; [ "$mode" = adjoint ] && driver=$original_adjoint
    read -r theirs theirs_rss < <(best_of "$runs" "$driver" -i "$input" -c "$catalogue" -s "$schema" -o "$work/original.xaif")
    read -r mine mine_rss < <(best_of "$runs" "$ours" "$mode" "$input" -o "$work/ours.xaif")
    printf '%-8s %-9s %8.2fs %8.2fs %8.1f× %11.0f %9.0f\n' "${mb}MiB" "$mode" "$theirs" "$mine" \
        "$(awk -v a="$theirs" -v b="$mine" 'BEGIN{print a/b}')" \
        "$(awk -v k="$theirs_rss" 'BEGIN{print k/1024}')" "$(awk -v k="$mine_rss" 'BEGIN{print k/1024}')"
    echo "  ($bytes bytes: original $(awk -v b="$bytes" -v s="$theirs" 'BEGIN{printf "%.1f", b/1e6/s}') MB/s, ours $(awk -v b="$bytes" -v s="$mine" 'BEGIN{printf "%.1f", b/1e6/s}') MB/s)"
done

files=("$shared"/corpus/*/tlm.in.xaif)
true_us=$(per_file /bin/true)
theirs_us=$(per_file "$original_tangent" -c "$catalogue" -s "$schema" -o "$work/original.xaif" -i)
mine_us=$(per_file "$ours" tangent -q -o "$work/ours.xaif")
awk -v n="${#files[@]}" -v t="$true_us" -v a="$theirs_us" -v b="$mine_us" 'BEGIN{
    printf "corpus tangent, one process per file (%d files): original %.2f ms, ours %.2f ms per file (%.1f×); above /bin/true (%.2f ms): %.2f and %.2f ms\n",
        n, a/n/1000, b/n/1000, a/b, t/n/1000, (a-t)/n/1000, (b-t)/n/1000}'
