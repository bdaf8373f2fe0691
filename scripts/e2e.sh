#!/usr/bin/env bash
# The end-to-end journeys in the real app: Xvfb for the display, and a private D-Bus session with
# an unlocked gnome-keyring (Secret Service) so the app's keychain is real — with HOME in a
# throwaway folder so nobody's own keyring or ~/.ssh is touched. The build below makes the app, the
# CLI (some journeys run it into the app's home) and the bare window; screenshots land in e2e/out/. Every file in e2e/tests/ is a
# journey binary (webdriver.rs, and one file per later step); pass a test name to run one.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export PATH="$CARGO_HOME/bin:$PATH"

# The same build as scripts/check-all.sh's (every target of the workspace, so the binaries carry
# the tests' features; a -p subset or `--bins` alone resolves features differently and rebuilds
# dependencies): under check-all it is already done. The e2e profile (.config/nextest.toml) runs
# the journeys, one at a time.
cargo build --locked --workspace --all-targets

tmp_home="$(mktemp -d)"
trap 'rm -rf "$tmp_home"' EXIT
HOME="$tmp_home" dbus-run-session -- bash -euo pipefail -c '
  printf %s "gpurent-e2e" | gnome-keyring-daemon --daemonize --unlock --components=secrets >/dev/null
  xvfb-run -a -s "-screen 0 1280x800x24" \
    cargo nextest run --locked --workspace --profile e2e "$@"
' e2e "$@" 2> >(grep -v "Failed to set fd limit" >&2)
