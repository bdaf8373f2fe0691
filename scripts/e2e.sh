#!/usr/bin/env bash
# The end-to-end journeys in the real app: Xvfb for the display, and a private D-Bus session with
# an unlocked gnome-keyring (Secret Service) so the app's keychain is real — with HOME in a
# throwaway folder so nobody's own keyring or ~/.ssh is touched. The app must be built first
# (`cargo build --workspace --bins`: some journeys run the CLI into the app's home); screenshots land in e2e/out/. Every file in e2e/tests/ is a
# journey binary (webdriver.rs, and one file per later step); pass a test name to run one.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export PATH="$CARGO_HOME/bin:$PATH"

# nextest with --workspace: the same build as the unit tests' (a -p subset rebuilds dependencies);
# its e2e profile (.config/nextest.toml) runs the journeys, one at a time.
cargo nextest run --locked --workspace --no-run

tmp_home="$(mktemp -d)"
trap 'rm -rf "$tmp_home"' EXIT
HOME="$tmp_home" dbus-run-session -- bash -euo pipefail -c '
  printf %s "gpurent-e2e" | gnome-keyring-daemon --daemonize --unlock --components=secrets >/dev/null
  xvfb-run -a -s "-screen 0 1280x800x24" \
    cargo nextest run --locked --workspace --profile e2e "$@"
' e2e "$@" 2> >(grep -v "Failed to set fd limit" >&2)
