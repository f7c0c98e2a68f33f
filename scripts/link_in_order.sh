#!/usr/bin/env bash
# The linker `scripts/build_dist.sh` gives rustc: `cc`, as rustc would call it, told to lay out
# the functions listed in scripts/symbol-order.txt side by side at the start of the text.
#
# Why: a small run executes about 800 of the binary's 7,000 functions, and in the compiler's
# order they lie in 55 of the 69 64-KiB windows of its 4.4 MB of code, each window faulted in
# on first use (2.5-3.3 us a fault in the VM measured). Side by side, the functions of every
# mode take 1.6 MB at the start; mini1's tangent then faults in 32 windows of code instead of
# 57, and a small corpus file's process costs 0.1-0.5 ms less (the README's start-up notes).
#
# The list holds names as `scripts/symbol_order.sh` found them. A Rust name ends with a hash
# (`17h`, hex digits, `E`) that changes with the compiler, the dependencies and the profile's
# debug settings: a listed name the objects being linked (`nm`) do not define is matched without
# its hash, to every instance of that function. Other names are passed on as they are: C
# libraries' functions (glibc's, linked from `-lc`) and names no longer defined anywhere, which
# the linker skips. So a stale list makes the binary slower to start, never wrong; with no
# list, no `nm`, no object among the arguments, or a linker other than lld, this is plain `cc`.
#
# XAIFBOOSTER_SYMBOL_ORDER names the list; when XAIFBOOSTER_SYMBOL_ORDER_REPORT is set, a line
# saying how many listed functions were found, and how many only without their hash, is
# written to the file it names.
set -euo pipefail
list=${XAIFBOOSTER_SYMBOL_ORDER:-}
objects=()
lld=false
for arg in "$@"; do
    case "$arg" in
        *.o | *.rlib | *.a) [ -f "$arg" ] && objects+=("$arg") ;;
        -fuse-ld=lld) lld=true ;;
    esac
done
# The ordering options are lld's: rustc links with it on x86_64 Linux since 1.90 (GNU ld has
# no such option).
if [ -z "$list" ] || [ ! -f "$list" ] || [ ${#objects[@]} -eq 0 ] || ! command -v nm > /dev/null || ! $lld; then
    exec cc "$@"
fi
order=$(mktemp)
trap 'rm -f "$order"' EXIT
# The defined text symbols of the objects, then the list.
{ nm --defined-only "${objects[@]}" 2> /dev/null || true; } | awk -v list="$list" -v report="${XAIFBOOSTER_SYMBOL_ORDER_REPORT:-}" '
    function unhashed(name) { sub(/17h[0-9a-f]+E$/, "", name); return name }
    NF == 3 && $2 ~ /^[tTwW]$/ && !($3 in defined) {
        defined[$3] = 1
        key = unhashed($3)
        instances[key] = (key in instances) ? instances[key] " " $3 : $3
    }
    END {
        while ((getline wanted < list) > 0) {
            if (wanted == "" || wanted ~ /^#/) continue
            listed++
            if (wanted in defined) { exact++; print wanted; continue }
            key = unhashed(wanted)
            if (key in instances) { unhashed_only++; n = split(instances[key], all, " "); for (i = 1; i <= n; i++) print all[i]; continue }
            elsewhere++; print wanted
        }
        if (report != "") printf "%d of the %d listed functions found by name, %d more without their hash, %d left to the linker to find (C libraries)\n", exact, listed, unhashed_only, elsewhere > report
    }' > "$order"
cc "$@" -Wl,--symbol-ordering-file="$order" -Wl,--no-warn-symbol-ordering
