#!/usr/bin/env bash
# Every check and test, in the order that fails fastest. Needs what scripts/install-deps.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

step() { printf '\n==> %s\n' "$*"; }
t0=$(date +%s)

step "format"
cargo fmt --all --check

step "UI types (tsc --checkJs over ui/, against the generated bindings)"
npx --no-install tsc -p ui/jsconfig.json

step "clippy (whole workspace, Tauri shell and E2E included)"
cargo clippy --locked --workspace --all-targets -- -D warnings

step "unit and integration tests (includes the bindings drift test)"
cargo test --locked --workspace --exclude gpurent-e2e

step "no Tauri in the core or CLI dependency trees"
for p in gpurent-core gpurent-cli; do
  if cargo tree --locked -p "$p" -e normal,build | grep -E '^[^a-z]*tauri' ; then
    echo "error: $p depends on tauri" >&2; exit 1
  fi
done

step "end-to-end journeys in the real app (Xvfb + WebKitWebDriver)"
cargo build --locked -p gpurent-app
bash scripts/e2e.sh

step "all checks passed in $(( $(date +%s) - t0 )) s"
