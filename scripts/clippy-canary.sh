#!/usr/bin/env bash
# Proves that RUSTC_WORKSPACE_WRAPPER + CLIPPY_ARGS (set by scripts/check-all.sh) really lint: a
# one-function crate with a clippy warning (`&Vec<u8>` as a parameter: clippy::ptr_arg) must FAIL
# to build through them, naming that lint, and build cleanly without them. Otherwise the one build
# in check-all.sh would pass code that `cargo clippy -- -D warnings` refuses.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${RUSTC_WORKSPACE_WRAPPER:?set by scripts/check-all.sh}" "${CLIPPY_ARGS:?set by scripts/check-all.sh}"
dir=target/clippy-canary
mkdir -p "$dir/src"
cp rust-toolchain.toml "$dir/"
cat >"$dir/Cargo.toml" <<'EOF2'
[package]
name = "gpurent-clippy-canary"
version = "0.0.0"
edition = "2021"
[workspace]
EOF2
cat >"$dir/src/lib.rs" <<'EOF2'
pub fn count(v: &Vec<u8>) -> usize {
    v.len()
}
EOF2
if out=$(cd "$dir" && cargo build -q 2>&1); then
  echo "error: the clippy canary (clippy::ptr_arg) built through $RUSTC_WORKSPACE_WRAPPER: the lints do not run, this build proves nothing" >&2
  exit 1
elif ! grep -q 'clippy::ptr.arg' <<<"$out"; then
  printf '%s\n' "$out" >&2
  echo "error: the clippy canary failed, but not on clippy::ptr_arg (toolchain broken?)" >&2
  exit 1
fi
(cd "$dir" && env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS cargo build -q)
echo "clippy canary: clippy::ptr_arg refused through the workspace's compiler, as it must be"
