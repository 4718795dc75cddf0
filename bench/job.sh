#!/usr/bin/env bash
# One job of the shell baseline of scripts/bench-run.sh: what pneuma does for
# a job, by hand. `git worktree add`, then the CLI in it, timed (microseconds).
# Usage: job.sh N   (environment: BENCH_REPO, BENCH_WORKTREES, BENCH_OUT, BENCH_CLAUDE)
set -euo pipefail
n="$1"
t0="${EPOCHREALTIME/./}"
# Concurrent `git worktree add`s in one repository race ("failed to read
# .git/worktrees/N/commondir"): retry like a careful script would (a failed
# add leaves its branch behind, so each try uses a new branch name).
for try in 1 2 3 4 5; do
  if git -C "$BENCH_REPO" worktree add -q -b "baseline/$n-$try" "$BENCH_WORKTREES/$n" HEAD 2>>"$BENCH_OUT/$n.git.err"; then
    break
  fi
  [[ $try == 5 ]] && exit 1
  rm -rf "${BENCH_WORKTREES:?}/$n"
  git -C "$BENCH_REPO" worktree prune
done
t1="${EPOCHREALTIME/./}"
cd "$BENCH_WORKTREES/$n"
"$BENCH_CLAUDE" -p "bench job $n: reply ok" --output-format json >"$BENCH_OUT/$n.json" 2>"$BENCH_OUT/$n.err"
t2="${EPOCHREALTIME/./}"
echo "$n $t0 $t1 $t2" >>"$BENCH_OUT/times"
