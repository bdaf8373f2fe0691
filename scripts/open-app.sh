#!/usr/bin/env bash
# Install what is missing, build gpurent and open the app (the README's "build and open" command).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
exec cargo run --locked -p gpurent-app
