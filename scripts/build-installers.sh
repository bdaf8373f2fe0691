#!/usr/bin/env bash
# Release installers for this OS through the Tauri bundler (src-tauri/tauri.conf.json):
# Linux .deb, Windows .msi + NSIS .exe, macOS .app + .dmg. Extra arguments go to `tauri build`.
# Signing reads its identity from the environment (README, "Installers"); without it the
# installers are unsigned. A release build costs ~10 min on 2 cores (measured: 10m05s for the
# .deb from a cold release target dir), so CI builds a debug .deb instead (scripts/check-all.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x node_modules/.bin/tauri ] || npm ci --no-audit --no-fund --loglevel=error
args=("$@")
if [ ${#args[@]} -eq 0 ] && [ "$(uname -s)" = Linux ]; then args=(--bundles deb); fi
(cd src-tauri && npx --no-install tauri build --ci "${args[@]}")
echo "installers: ${CARGO_TARGET_DIR:-$PWD/target}/release/bundle/"
