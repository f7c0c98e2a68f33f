#!/usr/bin/env bash
# Throughput and peak resident memory of identity, tangent and adjoint on large synthetic
# inputs, against libxml2 stream-parsing the same file (`xmllint --stream --noout`), and the
# start-up cost of one process per corpus file against /bin/true.
#
#   scripts/measure_memory.sh [SIZE_MB ...]        (default: 16 64)
#
# Environment: XAIFBOOSTER (the binary; default target/release/xaifbooster, or
# $CARGO_TARGET_DIR/release/xaifbooster), XAIF_SHARED (default ../shared), MODES (default
# "identity tangent adjoint"), RUNS (rounds, each xmllint then every mode; default 5), OUTPUT
# (`file`, the default: each mode writes a file with -o, removed before each run, untimed;
# `stdout`: to standard output, which goes to /dev/null, as a pipe's reader would take it).
# Needs /usr/bin/time (GNU time) and xmllint.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
binary=${XAIFBOOSTER:-${CARGO_TARGET_DIR:-$here/target}/release/xaifbooster}
shared=${XAIF_SHARED:-$here/../shared}
modes=${MODES:-identity tangent adjoint}
runs=${RUNS:-5}
output=${OUTPUT:-file}
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(16 64)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $output in
    file) to=(-o "$work/out.xaif") ;;
    stdout) to=() ;;
    *) echo "OUTPUT must be file or stdout, not $output" >&2; exit 1 ;;
esac
# shellcheck source=timing.sh
. "$here/scripts/timing.sh"

[ -x "$binary" ] || { echo "no binary at $binary (cargo build --release)" >&2; exit 1; }
# Every figure is taken from a copy of the binary. The page cache holds a file written whole in
# larger pieces than one the linker wrote bit by bit: a copy took ten fewer page faults per
# process, tenths of a millisecond of a corpus file's start-up. Copies make two builds comparable.
cp "$binary" "$work/xaifbooster"
binary=$work/xaifbooster

printf '%-8s %-9s %8s %9s %9s %9s %10s %12s\n' size mode seconds MB/s xmllint× rounds× peak_MiB peak/input
for mb in "${sizes[@]}"; do
    input=$work/synthetic_$mb.xaif
    python3 "$here/scripts/gen_xaif.py" --mb "$mb" --seed 1 -o "$input"
    bytes=$(stat -c %s "$input")
    # Rounds of xmllint then every mode, so that each mode's time is set beside xmllint's of
    # the same minute: on a shared machine both move by a third from one minute to the next.
    # Reported: the best time of each, the best against xmllint's best (xmllint×), the median
    # over the rounds of each round's time against that round's xmllint (rounds×), and the
    # highest peak of all rounds.
    declare -A best=() peak=() ratios=()
    for _ in $(seq "$runs"); do
        read -r base base_rss < <(run_once xmllint --stream --noout "$input") || exit 1
        for mode in xmllint $modes; do
            if [ "$mode" = xmllint ]; then
                seconds=$base rss=$base_rss
            else
                rm -f "$work/out.xaif"
                read -r seconds rss < <(run_once "$binary" "$mode" "$input" "${to[@]}") || exit 1
            fi
            if [ -z "${best[$mode]:-}" ] || awk -v a="$seconds" -v b="${best[$mode]}" 'BEGIN{exit !(a<b)}'; then
                best[$mode]=$seconds
            fi
            [ "$rss" -gt "${peak[$mode]:-0}" ] && peak[$mode]=$rss
            ratios[$mode]="${ratios[$mode]:-} $(awk -v s="$seconds" -v x="$base" 'BEGIN{print s/x}')"
        done
    done
    for mode in xmllint $modes; do
        median=$(echo "${ratios[$mode]}" | tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}')
        printf '%-8s %-9s %8.3f %9.1f %9.2f %9.2f %10.1f %12.2f\n' "${mb}MiB" "$mode" "${best[$mode]}" \
            "$(awk -v b="$bytes" -v s="${best[$mode]}" 'BEGIN{print b/1e6/s}')" \
            "$(awk -v s="${best[$mode]}" -v x="${best[xmllint]}" 'BEGIN{print s/x}')" "$median" \
            "$(awk -v k="${peak[$mode]}" 'BEGIN{print k/1024}')" "$(awk -v k="${peak[$mode]}" -v b="$bytes" 'BEGIN{print k*1024/b}')"
    done
    unset best peak ratios
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
