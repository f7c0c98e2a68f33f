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
# There it is profile-guided too: a first build counts its branches and calls while it runs
# scripts/pgo_train.sh, and the final build inlines and lays out code by those counts (2 MiB
# synthetic input, instructions of every thread: tangent 247 -> 211 M, identity 137 -> 113 M,
# adjoint 452 -> 384 M; a 16 MiB tangent's CPU time 17-20% less, its wall time 3-8% on two
# cores, ARCHITECTURE.md, "The dist build guided by profiles"). This needs `llvm-profdata`,
# which rustup installs with `rustup component add llvm-tools`; the profile is kept under the
# target directory, named by a hash of the instrumented binary and the training scripts, so a
# build of unchanged sources neither trains nor compiles again. XAIFBOOSTER_PGO=0 builds without it; XAIFBOOSTER_PGO=1
# fails where it cannot be done (CI); unset, a build that cannot do it says so and goes on
# without.
#
#   scripts/build_dist.sh        prints the path of the binary on its last line
set -euo pipefail
# Errors inside command substitutions (the profile's path) stop the build too.
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
root=$(pwd)
host=$(rustc -vV | sed -n 's/^host: //p')
target_dir=$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)

# Says why the build goes without profile guidance; stops it where guidance is required.
without_guidance() {
    echo "build_dist.sh: $1: building without profile guidance" >&2
    if [ "${XAIFBOOSTER_PGO:-}" = 1 ]; then
        exit 1
    fi
}

# Prints the merged profile of an instrumented build of HOST (built with FLAGS besides), training
# it first where no profile of that binary is kept; prints nothing where the build goes without.
profile_guided() {
    local host=$1 flags=$2
    [ "${XAIFBOOSTER_PGO:-}" = 0 ] && return 0
    local profdata
    profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
    if [ ! -x "$profdata" ]; then
        without_guidance "no llvm-profdata (rustup component add llvm-tools)"
        return 0
    fi
    local pgo="$target_dir/pgo"
    # Its paths go into RUSTFLAGS, which splits at blanks.
    if [[ "$pgo" =~ [[:space:]] ]]; then
        without_guidance "the target directory's path holds a blank"
        return 0
    fi
    mkdir -p "$pgo"
    # Its own target directory: the instrumented build's flags differ from the final one's,
    # and sharing one would rebuild each from scratch every time.
    CARGO_TARGET_DIR="$pgo/target" RUSTFLAGS="${RUSTFLAGS:-} $flags -C profile-generate=$pgo/raw" \
        cargo build --profile dist --target "$host" >&2
    local instrumented="$pgo/target/$host/dist/xaifbooster"
    local key
    # A new binary or new training runs make a new profile.
    key=$(cat "$instrumented" scripts/pgo_train.sh scripts/gen_xaif.py | sha256sum | cut -c1-16)
    local merged="$pgo/$key.profdata"
    if [ ! -s "$merged" ]; then
        rm -rf "$pgo/raw"
        mkdir -p "$pgo/raw"
        scripts/pgo_train.sh "$instrumented" >&2
        "$profdata" merge -o "$merged.tmp" "$pgo/raw" >&2
        mv "$merged.tmp" "$merged"
        # Profiles of older sources are of no further use.
        find "$pgo" -maxdepth 1 -name '*.profdata' ! -name "$key.profdata" -delete
    fi
    echo "$merged"
}
case "$host" in
    *-linux-gnu)
        report=$(mktemp)
        trap 'rm -f "$report"' EXIT
        static="-C target-feature=+crt-static -C relocation-model=static"
        profile=$(profile_guided "$host" "$static")
        profile_use=${profile:+-C profile-use=$profile}
        # The linker is named for the target alone (as the flags are), and not in RUSTFLAGS,
        # which splits at spaces.
        linker_variable=CARGO_TARGET_$(echo "$host" | tr 'a-z-' 'A-Z_')_LINKER
        env "$linker_variable=$root/scripts/link_in_order.sh" \
            XAIFBOOSTER_SYMBOL_ORDER="$root/scripts/symbol-order.txt" XAIFBOOSTER_SYMBOL_ORDER_REPORT="$report" \
            RUSTFLAGS="${RUSTFLAGS:-} $static $profile_use" \
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
