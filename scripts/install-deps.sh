#!/usr/bin/env bash
# Install the system packages and npm dev tools gpurent needs on Debian/Ubuntu (idempotent).
# Build: WebKitGTK 4.1 (Tauri v2), pkg-config, a C compiler. Test: Xvfb, WebKitWebDriver,
# ImageMagick + a CJK font (screenshots of the zh-CN UI), OpenSSH server (SSH tests), gnome-keyring + dbus (keychain tests).
# Cross-checks (scripts/cross-check.sh): mingw-w64 (Windows C code, windres), python3-venv (zig from
# PyPI for macOS C code), dpkg-dev; the script itself fetches Debian's rustc-web + std sources.
# Login shells that are not POSIX (fish, tcsh) for the login-shell SSH tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

pkgs=(libwebkit2gtk-4.1-dev build-essential pkg-config libssl-dev
      xvfb xauth webkit2gtk-driver imagemagick fonts-wqy-microhei
      openssh-server gnome-keyring libsecret-tools dbus libdbus-1-dev
      gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 python3-venv dpkg-dev
      fish tcsh)
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
if ! dpkg -s "${pkgs[@]}" >/dev/null 2>&1; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${pkgs[@]}"
fi
if ! command -v cargo >/dev/null && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null; then
  # rustup then installs the toolchain pinned in rust-toolchain.toml on first use.
  $SUDO apt-get install -y -q --no-install-recommends curl ca-certificates
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  export PATH="$HOME/.cargo/bin:$PATH"
fi
# cargo-nextest runs the tests (.config/nextest.toml); many Rust CI images carry it already.
if ! command -v cargo-nextest >/dev/null; then
  cargo install cargo-nextest --locked
fi
if ! command -v npm >/dev/null; then
  $SUDO apt-get install -y -q --no-install-recommends nodejs npm
fi
# typescript (tsc type-checks ui/) and @tauri-apps/cli (icons, installers), pinned by package-lock.json
npm ci --no-audit --no-fund --loglevel=error
