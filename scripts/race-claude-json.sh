#!/usr/bin/env bash
# Measures the race of concurrent Claude Code CLIs on ~/.claude.json (issue
# 14, item 4). For each N in RACE_N and each spacing in RACE_STAGGERS, it
# starts N real CLIs against the fake API (internal/testbed/fakeapi/cmd/fakeapi)
# in one scratch HOME, spaced by the stagger, each a two-request session
# (a Write tool call, then an answer) in its own directory, and counts:
#
#   failed     CLIs that exited non-zero or whose result is an error
#   corrupt    ~/.claude.json not valid JSON at the end (0 or 1)
#   corrupted  .claude.json.corrupted* files that appeared during the burst
#              (under HOME or ~/.claude/backups: the CLI found its config
#              unreadable, set it aside and started from a backup or afresh)
#   backups    files that appeared in ~/.claude/backups (the CLI also backs
#              up a sound config, so this alone proves nothing)
#   warned     CLIs whose stderr mentions a corrupt or invalid config
#
# The HOME is warmed by one CLI first, as a user's is. Each configuration
# runs RACE_REPEAT times (1). Output: one line per run, and a table.
#
# Environment: RACE_N ("4 16 32"), RACE_STAGGERS ("0 0.1", seconds),
# RACE_REPEAT (1), CLAUDE_BIN (the pinned CLI), RACE_KEEP=1 keeps the
# scratch directory.
set -euo pipefail
cd "$(dirname "$0")/.."

ns="${RACE_N:-4 16 32}"
staggers="${RACE_STAGGERS:-0 0.1}"
repeat="${RACE_REPEAT:-1}"
claude="${CLAUDE_BIN:-$PWD/.cache/claude/node_modules/@anthropic-ai/claude-code/bin/claude.exe}"
[[ -x "$claude" ]] || { echo "race: no Claude Code CLI at $claude" >&2; exit 3; }
command -v python3 >/dev/null || { echo "race: python3 is required" >&2; exit 3; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/pneuma-race.XXXXXX")"
api_pid=""
cleanup() {
  if [[ -n "$api_pid" ]]; then kill "$api_pid" 2>/dev/null || true; wait "$api_pid" 2>/dev/null || true; fi
  if [[ "${RACE_KEEP:-}" == 1 ]]; then echo "race: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

go build -o "$tmp/fakeapi" ./internal/testbed/fakeapi/cmd/fakeapi
"$tmp/fakeapi" -text ok -write out.txt -url-file "$tmp/api.url" >/dev/null 2>"$tmp/fakeapi.log" &
api_pid=$!
for _ in $(seq 100); do [[ -s "$tmp/api.url" ]] && break; sleep 0.1; done
[[ -s "$tmp/api.url" ]] || { echo "race: the fake API did not start" >&2; cat "$tmp/fakeapi.log" >&2; exit 3; }
api_url="$(cat "$tmp/api.url")"

# cli HOME DIR: one CLI session in DIR, its exit status in DIR/exit.
cli() {
  local home="$1" dir="$2" status=0
  (cd "$dir" && exec env -i "HOME=$home" "PATH=$PATH" "ANTHROPIC_BASE_URL=$api_url" \
    ANTHROPIC_API_KEY=sk-race-not-a-real-key CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_MAX_RETRIES=0 IS_SANDBOX=1 \
    "$claude" -p "write the file, then say ok" --output-format json --permission-mode acceptEdits \
    >"$dir/stdout.json" 2>"$dir/stderr.log") || status=$?
  echo "$status" >"$dir/exit"
}

# traces HOME: the config's backups and corrupted copies.
traces() {
  find "$1" -maxdepth 1 -name '.claude.json.corrupted*' 2>/dev/null
  find "$1/.claude/backups" -type f 2>/dev/null || true
}

printf '%-4s %-8s %-3s %6s %8s %9s %7s %7s %8s %6s\n' n stagger rep failed corrupt corrupted backups warned wall_ms load
rows=()
for n in $ns; do
  for s in $staggers; do
    for rep in $(seq "$repeat"); do
      run="$tmp/n$n-s$s-r$rep"
      home="$run/home"
      mkdir -p "$home/warm"
      cli "$home" "$home/warm"
      traces "$home" | sort >"$run/before"
      t0="${EPOCHREALTIME/./}"
      pids=()
      for i in $(seq "$n"); do
        mkdir -p "$run/job$i"
        cli "$home" "$run/job$i" &
        pids+=($!)
        [[ "$s" == 0 ]] || sleep "$s"
      done
      wait "${pids[@]}"
      t1="${EPOCHREALTIME/./}"
      failed=0 warned=0
      for i in $(seq "$n"); do
        d="$run/job$i"
        if [[ "$(cat "$d/exit")" != 0 ]] || ! python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(1 if r.get("is_error") else 0)' "$d/stdout.json" 2>/dev/null; then
          failed=$((failed + 1))
        fi
        grep -qiE 'corrupt|invalid json|configuration (file|error)' "$d/stderr.log" && warned=$((warned + 1))
      done
      corrupt=0
      python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$home/.claude.json" 2>/dev/null || corrupt=1
      traces "$home" | sort | comm -13 "$run/before" - >"$run/new"
      corrupted="$(grep -c 'corrupted' "$run/new" || true)"
      backups="$(grep -c '/backups/' "$run/new" || true)"
      load="$(cut -d' ' -f1 /proc/loadavg)"
      printf '%-4s %-8s %-3s %6s %8s %9s %7s %7s %8s %6s\n' "$n" "$s" "$rep" "$failed" "$corrupt" "$corrupted" "$backups" "$warned" "$(( (t1 - t0) / 1000 ))" "$load"
    done
  done
done
