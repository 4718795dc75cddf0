#!/usr/bin/env bash
# Benchmarks `pneuma run` against a plain shell baseline doing the same work
# (issue 3). With the fake API (internal/testbed/fakeapi/cmd/fakeapi) answering at
# once, JOBS one-turn jobs run at CONCURRENCY on a repository of FILES files:
#
#   baseline  xargs -P CONCURRENCY bench/job.sh: `git worktree add`, then
#             `claude -p --output-format json` in it
#   pneuma    `pneuma run -j CONCURRENCY --json`, once per stagger in STAGGERS
#             (0 and the default 100ms)
#
# and checks the targets: makespan of pneuma <= 1.05 x the baseline's;
# pneuma's own overhead per job (job duration minus the CLI process, from
# its spawn to its exit, minus creating or reusing the worktree: report.json
# timings) <= 20 ms median; pneuma's own peak RSS (VmHWM of its process, not
# of its children) <= 64 MB. The exit status is that of the first variant's
# checks (pneuma's defaults; --stagger 0 is reported beside it).
#
# With RUN_BENCH_SANDBOX=1 each variant also runs with `--sandbox` right
# after it (bubblewrap, the CONNECT proxy and pneuma-sandbox-forward, built
# here beside pneuma; a RUN_BENCH_BEFORE binary uses the forwarder beside
# it), and what the sandbox adds to a real-CLI job is printed: the median
# job duration and CLI process time, sandboxed minus not (issue 22, item 9:
# no measurable time).
#
# Environment: RUN_BENCH_JOBS (60), RUN_BENCH_CONCURRENCY (12), RUN_BENCH_FILES
# (10000), RUN_BENCH_STAGGERS ("default 0"), RUN_BENCH_SANDBOX (""), RUN_BENCH_BEFORE (another pneuma
# binary, e.g. built from an older commit, measured the same way right after
# this tree's, each stagger side by side), RUN_BENCH_PNEUMA_ARGS (extra
# flags of pneuma run), CLAUDE_BIN (the pinned CLI), RUN_BENCH_KEEP=1 keeps the
# scratch directory.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="${RUN_BENCH_JOBS:-60}"
par="${RUN_BENCH_CONCURRENCY:-12}"
nfiles="${RUN_BENCH_FILES:-10000}"
staggers="${RUN_BENCH_STAGGERS:-default 0}"
claude="${CLAUDE_BIN:-$PWD/.cache/claude/node_modules/@anthropic-ai/claude-code/bin/claude.exe}"
pneuma="$PWD/bin/pneuma"
# Extra pneuma run flags, split on blanks (never evaluated), e.g.
# RUN_BENCH_PNEUMA_ARGS="--keep-worktrees always".
read -r -a extra_args <<<"${RUN_BENCH_PNEUMA_ARGS:-}"

for tool in git python3; do
  command -v "$tool" >/dev/null || { echo "bench-run: $tool is required" >&2; exit 3; }
done
[[ -x "$claude" ]] || { echo "bench-run: no Claude Code CLI at $claude (run make claude)" >&2; exit 3; }
[[ "$jobs" =~ ^[0-9]+$ && "$par" =~ ^[0-9]+$ && "$nfiles" =~ ^[0-9]+$ ]] ||
  { echo "bench-run: RUN_BENCH_JOBS, RUN_BENCH_CONCURRENCY and RUN_BENCH_FILES must be numbers" >&2; exit 2; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/pneuma-bench-run.XXXXXX")"
api_pid=""
cleanup() {
  if [[ -n "$api_pid" ]]; then kill "$api_pid" 2>/dev/null || true; wait "$api_pid" 2>/dev/null || true; fi
  rm -rf "$tmp/trash" # the worktrees each side set aside
  if [[ "${RUN_BENCH_KEEP:-}" == 1 ]]; then echo "bench-run: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

now_us() { echo "${EPOCHREALTIME/./}"; }

echo "== build"
go build -o "$pneuma" .
[[ "${RUN_BENCH_SANDBOX:-}" != 1 ]] || go build -o "$(dirname "$pneuma")/pneuma-sandbox-forward" ./cmd/pneuma-sandbox-forward
go build -o "$tmp/fakeapi" ./internal/testbed/fakeapi/cmd/fakeapi
"$claude" --version

echo "== repository of $nfiles files"
repo="$tmp/repo"
git init -q -b main "$repo"
git -C "$repo" config user.name bench
git -C "$repo" config user.email bench@pneuma.invalid
python3 bench/mkrepo.py "$nfiles" | git -C "$repo" fast-import --quiet
git -C "$repo" checkout -q -f main
echo "$(git -C "$repo" ls-files | wc -l) files at $(git -C "$repo" rev-parse --short HEAD)"

echo "== fake API"
"$tmp/fakeapi" -text ok -url-file "$tmp/api.url" >/dev/null 2>"$tmp/fakeapi.log" &
api_pid=$!
for _ in $(seq 100); do [[ -s "$tmp/api.url" ]] && break; sleep 0.1; done
[[ -s "$tmp/api.url" ]] || { echo "bench-run: the fake API did not start:" >&2; cat "$tmp/fakeapi.log" >&2; exit 3; }
api_url="$(cat "$tmp/api.url")"
echo "$api_url"

# cli_env HOME: the hermetic environment of the CLI (and of pneuma).
cli_env() {
  local e=(
    "HOME=$1" "PATH=$PATH"
    "ANTHROPIC_BASE_URL=$api_url" "ANTHROPIC_API_KEY=sk-bench-not-a-real-key"
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1
    CLAUDE_CODE_MAX_RETRIES=0 GIT_CONFIG_NOSYSTEM=1
  )
  [[ "$(id -u)" == 0 ]] && e+=(IS_SANDBOX=1)
  printf '%s\0' "${e[@]}"
}

load() { cut -d' ' -f1-3 /proc/loadavg; }


# cpu_ticks: busy and idle clock ticks of the whole machine (/proc/stat), to
# tell CPU work apart from idle gaps in a makespan.
cpu_ticks() {
  local _ user nice system idle iowait irq softirq steal
  read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
  echo "$((user + nice + system + irq + softirq + steal)) $((idle + iowait))"
}

# settle: flush the page cache and wait (up to a minute) until the disk is
# quiet, so that one side's writes (its checkouts) do not slow the next one
# down.
settle() {
  sync
  local i io
  for i in $(seq 60); do
    io="$(awk '/^some/ { sub("avg10=", "", $2); print int($2) }' /proc/pressure/io 2>/dev/null || echo 0)"
    (( io < 2 )) && break
    sleep 1
  done
}

settle
echo "== baseline: xargs -P $par bench/job.sh ($jobs jobs)   load $(load)"
out="$tmp/baseline"
mkdir -p "$out" "$tmp/home-baseline" "$tmp/wt-baseline"
mapfile -d '' env_base < <(cli_env "$tmp/home-baseline")
c0=$(cpu_ticks)
# `times` (in this shell, not a subshell) before and after: the CPU of every
# process of the side, the children this shell waits for and theirs.
times >"$out/times0"
t0=$(now_us)
seq 1 "$jobs" | env -i "${env_base[@]}" BENCH_REPO="$repo" BENCH_WORKTREES="$tmp/wt-baseline" \
  BENCH_OUT="$out" BENCH_CLAUDE="$claude" xargs -P "$par" -n 1 "$PWD/bench/job.sh"
t1=$(now_us)
times >"$out/times1"
echo "$c0 $(cpu_ticks) $(getconf CLK_TCK)" >"$out/cpu_ticks"
echo "$((t1 - t0))" >"$out/makespan_us"
echo "makespan $(( (t1 - t0) / 1000 )) ms"
# Set the baseline's worktrees aside (deleted at the very end: on some
# disks, freeing 600,000 files slows every file creation for a minute after
# rm returns, which would count against whichever side runs next).
mkdir -p "$tmp/trash"
mv "$tmp/wt-baseline" "$tmp/trash/baseline"
git -C "$repo" worktree prune

# The jobs file lives in the repository (pneuma's run directory goes there),
# untracked and excluded.
echo "/jobs.yaml" >>"$repo/.git/info/exclude"
{
  echo "version: 1"
  echo "concurrency: $par"
  echo "jobs:"
  for i in $(seq 1 "$jobs"); do
    printf '  - name: job-%03d\n    prompt: "bench job %d: reply ok"\n' "$i" "$i"
  done
} >"$repo/jobs.yaml"

mkfifo "$tmp/tick"
exec {tick}<>"$tmp/tick"
variants=()
builds=("pneuma=$pneuma")
[[ -z "${RUN_BENCH_BEFORE:-}" ]] || builds+=("before=$RUN_BENCH_BEFORE")
for stagger in $staggers; do
boxes=(plain)
[[ "${RUN_BENCH_SANDBOX:-}" == 1 ]] && boxes+=(sandbox)
for build in "${builds[@]}"; do
for box in "${boxes[@]}"; do
  bin="${build#*=}"
  name="${build%%=*}-stagger-$stagger"
  [[ "$box" == plain ]] || name="${build%%=*}-sandbox-stagger-$stagger"
  variants+=("$name")
  out="$tmp/$name"
  mkdir -p "$out" "$tmp/home-$name"
  # Each variant starts cold, as the baseline does: no spare worktrees
  # (set aside like the baseline's, not deleted).
  if [[ -d "$repo/.pneuma/pool" ]]; then
    mv "$repo/.pneuma/pool" "$tmp/trash/pool-$name"
    git -C "$repo" worktree prune
  fi
  settle
  args=(run --json --claude "$claude" -j "$par")
  [[ "$stagger" != default ]] && args+=(--stagger "$stagger")
  [[ "$box" == plain ]] || args+=(--sandbox)
  args+=("${extra_args[@]}")
  echo "== $name: $bin ${args[*]} jobs.yaml   load $(load)"
  mapfile -d '' env_p < <(cli_env "$tmp/home-$name")
  c0=$(cpu_ticks)
  times >"$out/times0"
  t0=$(now_us)
  (cd "$repo" && exec env -i "${env_p[@]}" \
    "$bin" "${args[@]}" jobs.yaml >"$out/events.jsonl" 2>"$out/stderr.log") &
  pid=$!
  # pneuma's own peak RSS: VmHWM of its process, which only grows; polled
  # without forking (a builtin read) until the process is gone.
  # Its own CPU (utime + stime, no children) the same way, from the last
  # /proc/PID/stat read before it exits (pid is the subshell that execs it).
  hwm=0
  own=0
  while kill -0 "$pid" 2>/dev/null; do
    while read -r key value _; do
      [[ "$key" == VmHWM: ]] && hwm="$value"
    done 2>/dev/null <"/proc/$pid/status" || true
    if read -r stat 2>/dev/null <"/proc/$pid/stat"; then
      read -r -a f <<<"${stat##*) }"
      own=$(( f[11] + f[12] ))
    fi
    read -r -t 0.05 -u "$tick" _ || true # sleep without a process to count
  done
  status=0
  wait "$pid" || status=$?
  t1=$(now_us)
  times >"$out/times1"
  echo "$own $(getconf CLK_TCK)" >"$out/own_ticks"
  echo "$c0 $(cpu_ticks) $(getconf CLK_TCK)" >"$out/cpu_ticks"
  echo "$((t1 - t0))" >"$out/makespan_us"
  echo "$hwm" >"$out/vmhwm_kb"
  echo "$status" >"$out/exit"
  echo "makespan $(( (t1 - t0) / 1000 )) ms, exit $status, VmHWM $hwm kB"
  if [[ "$status" != 0 ]]; then tail -20 "$out/stderr.log" >&2; fi
  run_id="$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("run_id"): print(e["run_id"]); break' "$out/events.jsonl")"
  cp "$repo/.pneuma/runs/$run_id/run.json" "$repo/.pneuma/runs/$run_id/report.json" "$out/"
  # Worktrees left behind (failed jobs) would slow the next variant down.
  if [[ -d "$repo/.pneuma/worktrees" ]]; then
    mv "$repo/.pneuma/worktrees" "$tmp/trash/worktrees-$name"
    git -C "$repo" worktree prune
  fi
done
done
done

echo
echo "== results ($jobs jobs, -j $par, $nfiles files, $(nproc) CPUs, load $(load) at the end)"
python3 bench/analyze.py "$tmp" "${variants[@]}"
