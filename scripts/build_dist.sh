#!/usr/bin/env bash
# Builds the binary to deploy and measure: the `dist` profile (fat LTO, one codegen unit) and,
# on Linux with glibc, statically linked (`-C target-feature=+crt-static`, not position
# independent). A static binary starts faster: no dynamic loader, no shared libraries to map
# and relocate (about 0.3 ms of the 2-3 ms a small corpus file costs, measured with
# `perf stat -r 200`). The target is named explicitly so that the flags reach only the
# binary, not the build's procedural macros (which must stay dynamic libraries).
#
# There it is also linked through scripts/link_in_order.sh, which puts the functions a small
# run executes (scripts/symbol-order.txt) side by side: fewer page faults on start (why and how
# much: in that script). The line it reports on the list is printed.
#
#   scripts/build_dist.sh        prints the path of the binary on its last line
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
host=$(rustc -vV | sed -n 's/^host: //p')
case "$host" in
    *-linux-gnu)
        report=$(mktemp)
        trap 'rm -f "$report"' EXIT
        # The linker is named for the target alone (as the flags are), and not in RUSTFLAGS,
        # which splits at spaces.
        linker_variable=CARGO_TARGET_$(echo "$host" | tr 'a-z-' 'A-Z_')_LINKER
        env "$linker_variable=$root/scripts/link_in_order.sh" \
            XAIFBOOSTER_SYMBOL_ORDER="$root/scripts/symbol-order.txt" XAIFBOOSTER_SYMBOL_ORDER_REPORT="$report" \
            RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static -C relocation-model=static" \
            cargo build --profile dist --target "$host" >&2
        if [ -s "$report" ]; then
            echo "symbol order: $(cat "$report")" >&2
        fi
        echo "${CARGO_TARGET_DIR:-target}/$host/dist/xaifbooster"
        ;;
    *)
        cargo build --profile dist >&2
        echo "${CARGO_TARGET_DIR:-target}/dist/xaifbooster"
        ;;
esac
