#!/usr/bin/env bash
# Benchmarks of pneuma serve, measured in one run and printed side by side:
#   fan-out  10,000 events to 100 WebSocket clients at 2,000 events/s
#            (clients in their own process): p50/p99 latency from the append
#            of an event to each client's receipt, server CPU per event
#   replay   10,000 events read back from a log
#   RSS      of the process with 8 idle sessions of 1,000 events each
# Targets: p99 <= 10 ms, replay <= 50 ms, RSS <= 64 MiB. The machine's load
# is printed too: on a shared machine the latencies move with it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
PNEUMA_BENCH=1 go test -count=1 -v -run 'TestBench(FanOut|IdleRSS)$' ./serve/ >"$out" 2>&1 || true
# The same fan-out at a pace a streaming model sets (a few hundred events/s).
PNEUMA_BENCH=1 PNEUMA_BENCH_RATE=200 go test -count=1 -v -run 'TestBenchFanOut$' ./serve/ >>"$out" 2>&1 || true
go test -count=1 -run XXX -bench . -benchtime 20x ./internal/eventlog/ 2>&1 | grep Benchmark >>"$out" || true
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
grep -E -- '--- FAIL|^FAIL|panic' "$out" || true
fan=$(grep -o 'clients at 2000 events/s[ :].*' "$out" | head -1)
fan200=$(grep -o 'clients at 200 events/s[ :].*' "$out" | head -1)
replay=$(awk '/^BenchmarkReplay10k/ {printf "%.1f ms", $3/1e6; exit}' "$out")
rss=$(grep -o 'sessions (8,000 events): .*' "$out" | head -1 | sed 's/.*: //')
echo
printf '%-44s %s\n' "fan-out 10k events x 100 clients, 2000/s" "${fan#*events/s }"
printf '%-44s %s\n' "fan-out 10k events x 100 clients, 200/s" "${fan200#*events/s }"
printf '%-44s %s\n' "replay 10k events" "$replay"
printf '%-44s %s\n' "RSS, 8 idle sessions" "$rss"
grep Benchmark "$out" || true
