#!/usr/bin/env bash
# Throughput and peak resident memory of identity, tangent and adjoint on large synthetic
# inputs, against libxml2 stream-parsing the same file (`xmllint --stream --noout`), and the
# start-up cost of one process per corpus file against /bin/true.
#
#   scripts/measure_memory.sh [SIZE_MB ...]        (default: 16 64)
#
# Environment: XAIFBOOSTER (the binary; default target/release/xaifbooster, or
# $CARGO_TARGET_DIR/release/xaifbooster; the deployed build is `scripts/build_dist.sh`, which
# prints the binary's path: XAIFBOOSTER=$(scripts/build_dist.sh | tail -1)), XAIF_SHARED (default ../shared), MODES (default
# "identity tangent adjoint"), RUNS (timing repetitions, best kept; default 3).
# Needs /usr/bin/time (GNU time) and xmllint.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
binary=${XAIFBOOSTER:-${CARGO_TARGET_DIR:-$here/target}/release/xaifbooster}
shared=${XAIF_SHARED:-$here/../shared}
modes=${MODES:-identity tangent adjoint}
runs=${RUNS:-3}
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(16 64)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=timing.sh
. "$here/scripts/timing.sh"

[ -x "$binary" ] || { echo "no binary at $binary (cargo build --release)" >&2; exit 1; }
# Every figure is taken from a copy of the binary. The page cache holds a file written whole in
# larger pieces than one the linker wrote bit by bit: a copy took ten fewer page faults per
# process, tenths of a millisecond of a corpus file's start-up. Copies make two builds comparable.
cp "$binary" "$work/xaifbooster"
binary=$work/xaifbooster

printf '%-8s %-9s %8s %9s %9s %10s %12s\n' size mode seconds MB/s xmllint× peak_MiB peak/input
for mb in "${sizes[@]}"; do
    input=$work/synthetic_$mb.xaif
    python3 "$here/scripts/gen_xaif.py" --mb "$mb" --seed 1 -o "$input"
    bytes=$(stat -c %s "$input")
    read -r base base_rss < <(best_of "$runs" xmllint --stream --noout "$input")
    printf '%-8s %-9s %8.2f %9.1f %9s %10.1f %12.2f\n' "${mb}MiB" xmllint "$base" \
        "$(awk -v b="$bytes" -v s="$base" 'BEGIN{print b/1e6/s}')" 1.00 \
        "$(awk -v k="$base_rss" 'BEGIN{print k/1024}')" "$(awk -v k="$base_rss" -v b="$bytes" 'BEGIN{print k*1024/b}')"
    for mode in $modes; do
        read -r seconds rss < <(best_of "$runs" "$binary" "$mode" "$input" -o "$work/out.xaif")
        printf '%-8s %-9s %8.2f %9.1f %9.2f %10.1f %12.2f\n' "${mb}MiB" "$mode" "$seconds" \
            "$(awk -v b="$bytes" -v s="$seconds" 'BEGIN{print b/1e6/s}')" \
            "$(awk -v s="$seconds" -v x="$base" 'BEGIN{print s/x}')" \
            "$(awk -v k="$rss" 'BEGIN{print k/1024}')" "$(awk -v k="$rss" -v b="$bytes" 'BEGIN{print k*1024/b}')"
    done
done

# Start-up: one process per corpus tangent input, against as many /bin/true.
files=("$shared"/corpus/*/tlm.in.xaif)
if [ -e "${files[0]}" ]; then
    best() { local b=""; for _ in 1 2 3; do local t; t=$(per_file "$@"); if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t; fi; done; echo "$b"; }
    true_us=$(best /bin/true)
    for mode in identity tangent; do
        us=$(best "$binary" "$mode" -o "$work/out.xaif")
        awk -v n="${#files[@]}" -v t="$true_us" -v u="$us" -v m="$mode" \
            'BEGIN{printf "corpus %-9s %d files: %.2f ms per file, %.2f ms above /bin/true (%.2f ms)\n", m, n, u/n/1000, (u-t)/n/1000, t/n/1000}'
    done
fi
