#!/bin/sh
# Benchmark the Monitor's telemetry: HOSTS fake GPU hosts on loopback (each its own real sshd),
# streamed at 1 Hz for SECONDS; prints the CPU time / wall time of the gpurent process.
# Needs root, /usr/sbin/sshd and the gputest user (scripts/setup-test-host.sh).
# Usage: scripts/bench-monitor.sh [HOSTS=32] [SECONDS=30] [GPUS_PER_HOST=2]
set -e
cd "$(dirname "$0")/.."
exec cargo run --quiet --release -p gpurent-core --example monitor_bench -- "${1:-32}" "${2:-30}" "${3:-2}"
