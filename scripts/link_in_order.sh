#!/usr/bin/env bash
# The linker `scripts/build_dist.sh` gives rustc: `cc`, as rustc would call it, told to lay out
# the functions listed in scripts/symbol-order.txt side by side at the start of the text.
#
# Why: a small run executes about 800 of the binary's 7,000 functions, and in the compiler's
# order they lie in 55 of the 69 64-KiB windows of its 4.4 MB of code, each window faulted in
# on first use (2.5-3.3 us a fault in the VM measured). Side by side, the functions of every
# mode take 1.6 MB at the start; mini1's tangent then faults in 32 windows of code instead of
# 57, and a small corpus file's process costs 0.1-0.9 ms less (the README's start-up notes).
#
# Which names are put first is scripts/symbol_order_match.awk's rule: a listed Rust name that
# is not defined (its hash changes with the compiler) is matched without its hash, so a stale
# list makes the binary slower to start, never wrong. With no list, no `nm`, no object among
# the arguments, or a linker other than lld, this is plain `cc`.
#
# XAIFBOOSTER_SYMBOL_ORDER names the list; when XAIFBOOSTER_SYMBOL_ORDER_REPORT is set, the
# matcher's line on how many listed functions were found is written to the file it names.
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
# The defined symbols of the objects, matched against the list.
{ nm --defined-only "${objects[@]}" 2> /dev/null || true; } |
    awk -v list="$list" -v report="${XAIFBOOSTER_SYMBOL_ORDER_REPORT:-}" -f "$(dirname "$0")/symbol_order_match.awk" > "$order"
cc "$@" -Wl,--symbol-ordering-file="$order" -Wl,--no-warn-symbol-ordering
