#!/usr/bin/env bash
# A short, bounded cargo-fuzz run of the pasted-host parser (crates/gpurent-core/fuzz): it must find
# no panic. Needs a nightly toolchain (libFuzzer's sanitizer flags); cargo-fuzz is installed from
# crates.io when missing. Usage: bash scripts/fuzz.sh [SECONDS] (default 30).
set -euo pipefail
cd "$(dirname "$0")/../crates/gpurent-core"
secs="${1:-30}"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz: no nightly toolchain on this machine; the seeded property test in 'cargo test' (hostparse::fuzz_tests) covers the parser instead"
  exit 0
fi
command -v cargo-fuzz >/dev/null || cargo +nightly install cargo-fuzz --locked
mkdir -p fuzz/corpus/hostparse
cargo +nightly fuzz run hostparse fuzz/corpus/hostparse fuzz/seeds/hostparse -- \
  -max_total_time="$secs" -print_final_stats=1 2>&1 | tail -n 15
