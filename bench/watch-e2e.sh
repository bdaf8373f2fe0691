#!/usr/bin/env bash
# Benchmark (run on demand, not in CI): what watching costs END TO END — the release app's core
# streams + IPC + the WebView drawing the Monitor (the app process and its WebKit children) — for
# SMALL (8) and then HOSTS (32) hosts at 1 Hz, beside the core-only figure (`monitor_bench`, the
# same fake hosts streamed by the core alone) measured in the same run, so a busy machine
# disturbs both alike: core SMALL, end to end SMALL then HOSTS (one app session), core HOSTS.
# Prints % of one core (CPU time / wall time) per process, the totals and the ratios.
#
# Needs what scripts/e2e.sh needs (Xvfb, WebKitWebDriver, gnome-keyring, dbus-run-session) and
# the loopback sshd fixture (root, scripts/setup-test-host.sh).
# Usage: bash bench/watch-e2e.sh [SECONDS=30] [SMALL=8] [HOSTS=32]
# PROFILE=debug measures the debug builds of both (no release build at hand; compare ratios only).
# GPURENT_BENCH_SPLIT=1 adds where the WebView's share goes: the Monitor open with no column
# (split-idle) and the SMALL columns hidden — samples received and kept, nothing drawn
# (split-hidden) — beside drawn (e2e). GPURENT_BENCH_PERF=DIR then `perf record`s the
# WebKitWebProcess drawn and hidden, and the app process drawn, into DIR (after the measurements).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-30}"
small="${2:-8}"
large="${3:-32}"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export PATH="$CARGO_HOME/bin:$PATH"

profile="${PROFILE:-release}"
if [ "$profile" = release ]; then
  # Two calls: with --example, `-p gpurent-app -p gpurent-core` builds the example only.
  cargo build --locked --release -p gpurent-core --example monitor_bench
  cargo build --locked --release -p gpurent-app
else
  # --workspace, not -p: the same feature set as the tests' build, so no dependency rebuilds.
  cargo build --locked --workspace --bins --examples
fi
export GPURENT_BENCH_APP="${GPURENT_BENCH_APP:-$CARGO_TARGET_DIR/$profile/gpurent-app}"
cargo build --locked --workspace --bins
cargo test --locked --workspace --test watch_cost --no-run

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
core() {
  echo "== core only, $1 hosts (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "$CARGO_TARGET_DIR/$profile/examples/monitor_bench" "$1" "$secs" 2 | sed 's/^/RESULT core /' | tee -a "$log"
}

echo "== $profile builds, $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log"
core "$small"
tmp_home="$(mktemp -d)"
HOME="$tmp_home" GPURENT_BENCH_SECONDS="$secs" GPURENT_BENCH_HOSTS_SMALL="$small" GPURENT_BENCH_HOSTS="$large" \
  dbus-run-session -- bash -euo pipefail -c '
  printf %s "gpurent-e2e" | gnome-keyring-daemon --daemonize --unlock --components=secrets >/dev/null
  xvfb-run -a -s "-screen 0 1280x800x24" \
    cargo test --locked --workspace --test watch_cost -- --ignored --nocapture --test-threads=1
' 2> >(grep -v "Failed to set fd limit" >&2) | tee -a "$log"
rm -rf "$tmp_home"
core "$large"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log"

# The ratios: end to end over core only, per host count.
awk '
  /^RESULT (core|e2e) / {
    kind = $2; hosts = ""; pct = ""
    for (i = 3; i <= NF; i++) {
      if ($i ~ /^hosts=/) hosts = substr($i, 7)
      if ($i ~ /^cpu\/wall=/) { pct = substr($i, 10); sub(/%.*/, "", pct) }
    }
    fig[kind, hosts] = pct; seen[hosts] = 1
  }
  END {
    print "\n| hosts (2 GPUs each, 1 Hz) | core only, % of one core | end to end (app + WebKit), % of one core | ratio |"
    print "|---|---|---|---|"
    for (h in seen) {
      c = fig["core", h]; e = fig["e2e", h]
      printf "| %s | %s | %s | %s |\n", h, c, e, (c > 0 && e != "") ? sprintf("%.1f", e / c) : "?"
    }
  }' "$log"
