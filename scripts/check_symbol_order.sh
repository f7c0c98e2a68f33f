#!/usr/bin/env bash
# Checks that a dist binary was linked with scripts/symbol-order.txt applied: at least half the
# listed Rust functions are defined (by name, or without their hash: a stale list falls below
# half), and the functions scripts/symbol_order_match.awk picks from the list, the rule the
# linker wrapper (scripts/link_in_order.sh) follows, lie side by side at the start of the
# code, before every other Rust function.
#
#   scripts/check_symbol_order.sh DIST_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nm --defined-only "$1" > "$work/symbols"
awk -v list="$here/scripts/symbol-order.txt" -v report="$work/report" -f "$here/scripts/symbol_order_match.awk" \
    "$work/symbols" > "$work/first"
cat "$work/report"
awk 'NR == FNR && FILENAME ~ /report$/ { found = $2; listed = $5; next }
    FILENAME ~ /first$/ { first[$1] = 1; next }
    NF == 3 && $2 ~ /^[tTwW]$/ && $3 ~ /^(_ZN|_R)/ {
        if ($3 in first) { if ($1 > last_first) last_first = $1 }
        else if (other == "" || $1 < other) other = $1
    }
    END {
        printf "the listed functions end at 0x%s, the first other Rust function is at 0x%s\n", last_first, other
        if (found * 2 < listed) { print "the list is stale: run scripts/symbol_order.sh"; exit 1 }
        if (last_first > other) { print "the listed functions are not laid out first: not linked by scripts/link_in_order.sh?"; exit 1 }
    }' "$work/report" "$work/first" "$work/symbols"
