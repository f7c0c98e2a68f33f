#!/usr/bin/env bash
# Checks that a dist binary was linked with scripts/symbol-order.txt applied: at least half the
# listed Rust functions are defined (by name, or without their hash, as
# scripts/link_in_order.sh matches them: a stale list falls below half), and the functions the
# list names lie side by side at the start of the code, before every other Rust function.
#
#   scripts/check_symbol_order.sh DIST_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
symbols=$(mktemp)
trap 'rm -f "$symbols"' EXIT
nm --defined-only "$1" | awk 'NF == 3 && $2 ~ /^[tTwW]$/ { print $1, $3 }' > "$symbols"
awk -v list="$here/scripts/symbol-order.txt" '
    function unhashed(name) { sub(/17h[0-9a-f]+E$/, "", name); return name }
    NR == FNR { defined[$2] = 1; instances[unhashed($2)] = instances[unhashed($2)] " " $2; next }
    FNR == 1 {
        # The functions the linker was told to put first, as scripts/link_in_order.sh chose them.
        while ((getline name < list) > 0) {
            if (name !~ /^(_ZN|_R)/) continue
            rust++
            if (name in defined) { found++; first[name] = 1; continue }
            if (unhashed(name) in instances) {
                found++; n = split(instances[unhashed(name)], all, " ")
                for (i = 1; i <= n; i++) first[all[i]] = 1
            }
        }
    }
    $2 ~ /^(_ZN|_R)/ {
        if ($2 in first) { if ($1 > last_first) last_first = $1 }
        else if (other == "" || $1 < other) other = $1
    }
    END {
        printf "%d of the %d listed Rust functions defined; they end at 0x%s, the first other Rust function is at 0x%s\n", found, rust, last_first, other
        if (found * 2 < rust) { print "the list is stale: run scripts/symbol_order.sh"; exit 1 }
        if (last_first > other) { print "the listed functions are not laid out first: not linked by scripts/link_in_order.sh?"; exit 1 }
    }' "$symbols" "$symbols"
