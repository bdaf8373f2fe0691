#!/usr/bin/env bash
# Startup time and memory (PSS) of gpurent next to a bare Tauri window, measured the same way in
# one run under Xvfb. Usage: bash scripts/measure-startup.sh [--release]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=()
[ "${1:-}" = "--release" ] && profile=(--release)
cargo build --locked "${profile[@]}" -p gpurent-app -p bare-window
xvfb-run -a -s '-screen 0 1280x800x24' \
  cargo test --locked "${profile[@]}" -p gpurent-e2e --test startup -- --ignored --nocapture
