# Timing helpers shared by scripts/measure_memory.sh and scripts/compare_original.sh (sourced,
# not run). The caller sets `work` (a scratch folder) and, for `per_file`, the array `files`.

# run_once COMMAND...: prints "seconds peak_kib" of one run; stops the caller's script when it
# fails. The time is taken with the clock's nanoseconds around the run (GNU time's own `%e` has
# ten-millisecond steps, 8% of a 0.13 s run), the peak from GNU time.
run_once() {
    local start end
    start=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || {
        echo "failed: $*" >&2; cat "$work/stderr" >&2; exit 1; }
    end=$(date +%s%N)
    awk -v ns="$((end - start))" -v rss="$(cat "$work/time")" 'BEGIN{printf "%.4f %d\n", ns/1e9, rss}'
}

# best_of RUNS COMMAND...: prints "seconds peak_kib" of the fastest of RUNS runs (the peak
# resident memory of that run); stops the caller's script at a failing run.
best_of() {
    local n=$1; shift
    local best="" best_rss=""
    for _ in $(seq "$n"); do
        read -r seconds rss < <(run_once "$@") || exit 1
        if [ -z "$best" ] || awk -v a="$seconds" -v b="$best" 'BEGIN{exit !(a<b)}'; then
            best=$seconds best_rss=$rss
        fi
    done
    echo "$best $best_rss"
}

# per_file COMMAND...: microseconds to run `COMMAND FILE` once for each of "${files[@]}", one
# process per file (failures are timed too).
per_file() {
    local start end
    start=$(date +%s%N)
    for f in "${files[@]}"; do "$@" "$f" >/dev/null 2>&1 || true; done
    end=$(date +%s%N)
    echo $(( (end - start) / 1000 ))
}
