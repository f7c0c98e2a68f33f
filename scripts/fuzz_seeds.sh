#!/usr/bin/env bash
# Seeds the cargo-fuzz corpora (fuzz/corpus/<target>/) with the shared corpus inputs and the
# repository's test programs up to 40 kB. Nothing here is committed (fuzz/corpus is ignored).
# Usage: scripts/fuzz_seeds.sh   then   cargo +nightly fuzz run tangent -- -max_total_time=600
set -euo pipefail
cd "$(dirname "$0")/.."
shared="${XAIF_SHARED:-$(cd .. && pwd)/shared}"
for target in read validate identity tangent adjoint streamed run; do
  dir="fuzz/corpus/$target"
  mkdir -p "$dir"
  find "$shared/corpus" testdata -name '*.xaif' -size -40k | sort | while read -r file; do
    cp "$file" "$dir/$(echo "$file" | tr '/' '_')"
  done
done
echo "seeded $(ls fuzz/corpus/read | wc -l) inputs per target"
