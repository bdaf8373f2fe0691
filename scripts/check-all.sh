#!/usr/bin/env bash
# Every check and test, in the order that fails fastest. Needs what scripts/install-deps.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# CI builds from a fresh clone once: incremental compilation only adds work there (its cache is
# written and never read). A developer's machine keeps it.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi

t0=$(date +%s)
ts=$t0
# Each step prints how long the previous one took (CI must stay under 45 min cold on 2 cores).
step() {
  now=$(date +%s)
  [ "$now" = "$t0" ] || printf '    (%d s)\n' $((now - ts))
  ts=$now
  printf '\n==> %s\n' "$*"
}

step "format (Rust: cargo fmt; the UI's JS, CSS and HTML: prettier, pinned in package.json, .prettierrc)"
cargo fmt --all --check
npx --no-install prettier --check ui

step "UI types (tsc --checkJs over ui/, against the generated bindings), translations, no import cycles, the screens' teardown"
npx --no-install tsc -p ui/jsconfig.json
node scripts/check-i18n.mjs
node scripts/check-import-cycles.mjs
node scripts/check-app-facade.mjs --stats && node --test scripts/test-check-app-facade.mjs
node --test scripts/test-ui-screen.mjs scripts/test-ui-monitor.mjs scripts/test-ui-money.mjs scripts/test-ui-goal.mjs

# The Windows/macOS type-check runs beside everything below at the lowest CPU priority (nice 19):
# it is ~17 min of compiling when cold, and the steps below leave a core idle for much of their
# time (a big crate compiling alone, tests and journeys waiting on sshd, Prism, WebKit, the
# network during installs). Its log is printed, and its status counted, at the end.
# Debian's rustc-web + std sources, mingw-w64 and zig (PyPI); cached under ~/.cache/gpurent-cross,
# its own target dir target/cross. Fails on a Unix-only (or Linux-only) API in shared code.
mkdir -p target
cross_log=target/cross-check.log
# setsid: its own process group, so a failing step below ends it with all its compilers. A new
# session is also a new scheduler autogroup (Linux, sched_autogroup_enabled=1): nice only ranks
# processes inside their group, and groups share the CPU equally, so at nice 19 alone the
# type-check still took half of both cores from the build below. Its group is set to nice 19
# too (where the kernel has autogroups), so it really takes only what the steps leave idle.
setsid bash -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null
  exec nice -n 19 env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS bash scripts/cross-check.sh' \
  >"$cross_log" 2>&1 </dev/null &
cross_pid=$!
trap 'kill -- "-$cross_pid" 2>/dev/null || true' EXIT

step "one build of every target (lib, bins, tests, benches, examples), linted by clippy as it compiles (clippy --all-targets -D warnings)"
# One build serves clippy, the tests, the keychain tests and the journeys. `cargo clippy` checks
# in a mode of its own (metadata only), so every dependency was compiled twice when cold: once
# checked for clippy, once built for the tests (~17 min of CI's 50 on 2 cores). Here clippy's
# driver IS the compiler of the workspace's own crates (RUSTC_WORKSPACE_WRAPPER; dependencies are
# built by rustc as ever, so they are shared with every other build): it runs the same lints as
# `cargo clippy --workspace --all-targets -- -D warnings` (CLIPPY_ARGS is how cargo-clippy hands
# `-D warnings` to it) and then compiles. Every cargo call below inherits the two variables, so
# its fingerprints match and it rebuilds nothing. The canary proves the lints really run.
RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
bash scripts/clippy-canary.sh
cargo build --locked --workspace --all-targets

step "unit and integration tests (bindings drift, real loopback sshd, fake GPU hosts, Prism; the paste parser's seeded fuzz test)"
# The SSH tests log in as a test user on a loopback sshd they start themselves; creating the user
# needs root, once, and the fixture runs as root. Here a missing fixture FAILS the SSH tests (with
# how to enable them) instead of skipping them: this script must prove they pass.
export GPURENT_REQUIRE_SSH=1
if [ "$(id -u)" = 0 ]; then bash scripts/setup-test-host.sh; else
  echo "error: not root, so the SSH tests cannot run and will fail. Run 'sudo bash scripts/setup-test-host.sh' once, then run this script as root." >&2; fi
if [ -x /opt/gpurent-test-jupyter/bin/python ]; then
  export GPURENT_TEST_JUPYTER_PYTHON=/opt/gpurent-test-jupyter/bin/python
fi
# nextest (.config/nextest.toml) runs what the build above made (it rebuilds nothing); tests run
# four at a time, those that see the whole machine one at a time.
cargo nextest run --locked --workspace

step "keychain round trips against the real Secret Service (gnome-keyring, private D-Bus session)"
bash scripts/test-keychain.sh

step "no Tauri in the core or CLI dependency trees"
for p in gpurent-core gpurent-cli; do
  if cargo tree --locked -p "$p" -e normal,build | grep -E '^[^a-z]*tauri' ; then
    echo "error: $p depends on tauri" >&2; exit 1
  fi
done

step "end-to-end journeys in the real app (Xvfb + WebKitWebDriver)"
# The app, the CLI and the bare window the journeys start were built above, with the tests'
# features (a `cargo build --bins` alone leaves out the dev-dependencies' features, so tokio,
# syn and all above them were built a second time: 272 s cold).
bash scripts/e2e.sh

step "installer: the debug app the journeys ran, bundled as a .deb (release installers: scripts/build-installers.sh)"
# Proves the bundle config (icons, deb metadata) in ~5 s: `tauri bundle` packs the binary already
# built. (`tauri build` rebuilt the whole dependency tree, ~15 min on 2 cores, and ran CI out of time.)
(cd src-tauri && npx --no-install tauri bundle --debug --ci --bundles deb)

step "cross-platform type-check: core, CLI and app for Windows (x86_64-pc-windows-gnu) and macOS (aarch64-apple-darwin), started in the background after the UI checks"
cross_status=0
wait "$cross_pid" || cross_status=$?
trap - EXIT
cat "$cross_log"
if [ "$cross_status" != 0 ]; then
  echo "error: the Windows/macOS type-check failed (exit $cross_status; log above, also in $cross_log)" >&2
  exit "$cross_status"
fi

step "all checks passed in $(( $(date +%s) - t0 )) s"
