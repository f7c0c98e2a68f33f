# Which symbols a dist binary's functions are laid out by: reads `nm --defined-only` output (of
# the objects being linked, or of a linked binary) and prints, in the order of the list
# `-v list=FILE` (scripts/symbol-order.txt), the names to put first. One rule, shared by
# scripts/link_in_order.sh (which gives them to the linker) and scripts/check_symbol_order.sh
# (which checks a binary has them first):
#   - a listed name that is defined is itself;
#   - otherwise, a Rust name is matched without its hash (`17h`, hex digits, `E`, which
#     changes with the compiler, the dependencies and the profile's debug settings): every
#     defined instance of that function;
#   - any other name is passed on as it is (C libraries' functions, which the linker takes
#     from `-lc`, and names no longer defined anywhere, which it skips).
# With `-v report=FILE`, one line is written there:
#   "found F of the R listed Rust functions (U only without their hash); C other names left to the linker"
function unhashed(name) { sub(/17h[0-9a-f]+E$/, "", name); return name }
function rust(name) { return name ~ /^(_ZN|_R)/ }
NF == 3 && $2 ~ /^[tTwW]$/ && !($3 in defined) {
    defined[$3] = 1
    key = unhashed($3)
    instances[key] = (key in instances) ? instances[key] " " $3 : $3
}
END {
    while ((getline wanted < list) > 0) {
        if (wanted == "" || wanted ~ /^#/) continue
        if (rust(wanted)) listed++
        if (wanted in defined) { if (rust(wanted)) found++; print wanted; continue }
        key = unhashed(wanted)
        if (rust(wanted) && (key in instances)) {
            found++; without_hash++
            n = split(instances[key], all, " ")
            for (i = 1; i <= n; i++) print all[i]
            continue
        }
        others++; print wanted
    }
    if (report != "")
        printf "found %d of the %d listed Rust functions (%d only without their hash); %d other names left to the linker\n", found, listed, without_hash, others > report
}
