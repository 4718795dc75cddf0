#!/usr/bin/env bash
# Benchmarks of pneuma serve: fan-out of 10,000 events to 100 WebSocket
# clients (p50/p99, CPU per event), replay of 10,000 events, RSS with 8 idle
# sessions. Targets: p99 <= 10 ms, replay <= 50 ms, RSS <= 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
PNEUMA_BENCH=1 go test -count=1 -v -run 'TestBench' ./serve/ | grep -E 'fan-out|RSS|FAIL|^ok' || true
go test -count=1 -v -run 'TestReplay10k' ./serve/eventlog/ | grep -E 'replay|FAIL|^ok'
go test -count=1 -run XXX -bench . -benchtime 20x ./serve/eventlog/ | grep Benchmark
