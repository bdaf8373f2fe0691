#!/usr/bin/env bash
# Keychain round trips against the REAL Secret Service: gnome-keyring-daemon, unlocked, inside a
# private D-Bus session (dbus-run-session) with HOME in a throwaway directory, so the user's own
# keyring is never touched. Runs the App-level test (crates/gpurent-core/tests/keychain_secret_service.rs)
# and the CLI round trip (crates/gpurent-cli/tests/key_cli.rs) with GPURENT_TEST_SECRET_SERVICE=1.
#
# Needs: gnome-keyring, dbus (dbus-run-session), libsecret-tools (secret-tool), libdbus-1-dev +
# pkg-config (to build keyring's Secret Service backend), openssh-client (ssh-keygen).
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in dbus-run-session gnome-keyring-daemon secret-tool ssh-keygen; do
  if ! command -v "$tool" >/dev/null; then
    echo "test-keychain: '$tool' is missing (apt-get install gnome-keyring dbus libsecret-tools openssh-client)" >&2
    exit 1
  fi
done

# cargo and rustup live under the real HOME; keep them when HOME moves.
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

# The two test binaries, through nextest with --workspace: the same build as every other test's
# (`cargo test -p gpurent-cli` resolved features of its own and rebuilt dependencies: 316 s cold
# in CI). Built outside the session so its time is not spent with the daemon up.
tests='binary(keychain_secret_service) | binary(key_cli)'
cargo nextest run --locked --workspace --no-run

tmp_home="$(mktemp -d)"
trap 'rm -rf "$tmp_home"' EXIT

HOME="$tmp_home" GPURENT_TEST_SECRET_SERVICE=1 dbus-run-session -- bash -euo pipefail -c '
  # --unlock reads the password from stdin and creates an unlocked "login" keyring as default.
  printf %s "gpurent-test-password" | gnome-keyring-daemon --daemonize --unlock --components=secrets >/dev/null
  cargo nextest run --locked --workspace --no-capture -E "$1"
' keychain "$tests" 2> >(grep -v "Failed to set fd limit" >&2)
