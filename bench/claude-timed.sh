#!/usr/bin/env bash
# The CLI as scripts/bench-run.sh gives it to pneuma (--claude): runs the real
# CLI ($BENCH_CLAUDE) with pneuma's argv and stdio, then appends
# "CWD START_US END_US" to $BENCH_CLI_TIMES, so the benchmark knows each CLI
# process's wall time. This script's own start-up counts as pneuma's overhead.
t0="${EPOCHREALTIME/./}"
"$BENCH_CLAUDE" "$@"
rc=$?
t1="${EPOCHREALTIME/./}"
printf '%s %s %s\n' "$PWD" "$t0" "$t1" >>"$BENCH_CLI_TIMES"
exit "$rc"
