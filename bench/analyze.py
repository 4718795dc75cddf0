#!/usr/bin/env python3
"""Prints the figures of scripts/bench-run.sh and checks the targets of
issue 3. Usage: analyze.py SCRATCH_DIR VARIANT...; SCRATCH_DIR holds
baseline/ (times, makespan_us) and one directory per pneuma variant
(report.json, makespan_us, vmhwm_kb, exit).
Exits 1 when the first variant misses a target, 2 when data is missing.

pneuma's own overhead per job is, from report.json,
    duration_ms (job start to end: worktree, CLI, commit, diff stats,
    transcript archive, parking the worktree)
  - timings.cli_ms (the CLI process, from its spawn to its exit and the end
    of its output: the baseline's "claude process" is timed the same way,
    by the shell around the spawn)
  - timings.worktree_ms (git worktree add, or the reuse of a finished job's
    worktree; the change watch pneuma starts after it counts as overhead).
The makespans are wall clock around each whole run.
"""
import json
import os
import statistics
import sys

MAKESPAN_RATIO = 1.05
OVERHEAD_MS = 20.0
RSS_KB = 64 * 1024


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def line(label, xs):
    return "%-34s median %7.1f  p90 %7.1f  max %7.1f ms" % (label, statistics.median(xs), pct(xs, 90), max(xs))


def shell_times(path):
    """CPU seconds of the waited-for children in the output of bash's `times`."""
    def sec(t):
        m, s = t.rstrip("s").split("m")
        return int(m) * 60 + float(s)
    lines = open(path).read().split("\n")
    u, s = lines[1].split()
    return sec(u) + sec(s)


def cpu(d):
    """The machine's busy and idle CPU seconds during a run, the CPU of the
    side's processes (the tool, its git and CLI processes), and the tool's
    own when known."""
    out = ""
    try:
        b0, i0, b1, i1, hz = (int(x) for x in open(os.path.join(d, "cpu_ticks")).read().split())
        out += "\n  machine CPU busy %.1f s, idle %.1f s" % ((b1 - b0) / hz, (i1 - i0) / hz)
        out += "; this side's processes %.1f s" % (shell_times(os.path.join(d, "times1")) - shell_times(os.path.join(d, "times0")))
        own, hz = (int(x) for x in open(os.path.join(d, "own_ticks")).read().split())
        out += ", of which pneuma itself %.2f s" % (own / hz)
    except (OSError, ValueError, IndexError):
        pass
    return out


def baseline(d):
    wt, cli = [], []
    with open(os.path.join(d, "times")) as f:
        for l in f:
            _, t0, t1, t2 = (int(x) for x in l.split())
            wt.append((t1 - t0) / 1000)
            cli.append((t2 - t1) / 1000)
    ms = int(open(os.path.join(d, "makespan_us")).read()) / 1000
    return ms, wt, cli


def pneuma(d):
    rep = json.load(open(os.path.join(d, "report.json")))
    wt, cli, over, own, bad = [], [], [], [], []
    timings = {}
    for j in rep["jobs"]:
        if j["status"] != "succeeded":
            bad.append("%s: %s %s" % (j["name"], j["status"], j.get("reason", "")))
        t = j.get("timings") or {}
        for k, v in t.items():
            timings.setdefault(k, []).append(v)
        if not t:
            continue
        wt.append(t.get("worktree_ms", 0))
        cli.append(t.get("cli_ms", 0))
        over.append(j["duration_ms"] - t.get("cli_ms", 0) - t.get("worktree_ms", 0))
        # What is left when the CLI and every git command are taken out:
        # pneuma's own code (scheduling, stream parsing, journal, archive).
        own.append(j["duration_ms"] - sum(t.get(k, 0) for k in ("worktree_ms", "wait_ms", "cli_ms", "commit_ms", "diff_ms", "remove_ms")))
    ms = int(open(os.path.join(d, "makespan_us")).read()) / 1000
    rss = int(open(os.path.join(d, "vmhwm_kb")).read())
    code = int(open(os.path.join(d, "exit")).read())
    return ms, wt, cli, over, rss, code, bad, len(rep["jobs"]), timings, own


def main():
    root, variants = sys.argv[1], sys.argv[2:]
    b_ms, b_wt, b_cli = baseline(os.path.join(root, "baseline"))
    print("baseline (xargs + git worktree add + claude -p --output-format json)")
    print("  makespan %.0f ms, %d jobs%s" % (b_ms, len(b_wt), cpu(os.path.join(root, "baseline"))))
    print("  " + line("git worktree add", b_wt))
    print("  " + line("claude process", b_cli))
    status = 0
    for i, v in enumerate(variants):
        ms, wt, cli, over, rss, code, bad, n, timings, own = pneuma(os.path.join(root, v))
        print(v)
        print("  makespan %.0f ms (%.3f x baseline), %d jobs, exit %d, peak RSS %.1f MB%s" % (ms, ms / b_ms, n, code, rss / 1024, cpu(os.path.join(root, v))))
        if not over:
            print("  no job timings")
            status = status or (2 if i == 0 else 0)
            continue
        print("  " + line("worktree (create or reuse)", wt))
        print("  " + line("claude process", cli))
        print("  " + line("pneuma overhead per job", over))
        for k in ("worktree_ms", "wait_ms", "cli_ms", "commit_ms", "diff_ms", "archive_ms", "remove_ms"):
            if k in timings:
                print("  " + line("report timings." + k, timings[k]))
        if own:
            print("  " + line("pneuma's own code (no CLI, no git)", own))
        for b in bad:
            print("  not succeeded: " + b)
        checks = [
            ("makespan %.3f x baseline (<= %.2f)" % (ms / b_ms, MAKESPAN_RATIO), ms <= MAKESPAN_RATIO * b_ms),
            ("overhead per job median %.1f ms (<= %.0f ms)" % (statistics.median(over), OVERHEAD_MS), statistics.median(over) <= OVERHEAD_MS),
            ("peak RSS %.1f MB (<= %d MB)" % (rss / 1024, RSS_KB // 1024), 0 < rss <= RSS_KB),
            ("every job succeeded (exit %d)" % code, code == 0 and not bad),
        ]
        for label, ok in checks:
            print("  %-5s %s" % ("PASS" if ok else "FAIL", label))
            if i == 0 and not ok:
                status = 1
    sandbox_added(root, variants)
    sys.exit(status)


def sandbox_added(root, variants):
    """Prints what --sandbox adds to a real-CLI job: each sandboxed variant
    (NAME-sandbox-stagger-S) against its twin (NAME-stagger-S)."""
    for v in variants:
        if "-sandbox-stagger-" not in v:
            continue
        twin = v.replace("-sandbox-stagger-", "-stagger-")
        if twin not in variants:
            continue
        a, b = pneuma(os.path.join(root, v)), pneuma(os.path.join(root, twin))
        rep_a = json.load(open(os.path.join(root, v, "report.json")))
        rep_b = json.load(open(os.path.join(root, twin, "report.json")))
        dur_a = [j["duration_ms"] for j in rep_a["jobs"]]
        dur_b = [j["duration_ms"] for j in rep_b["jobs"]]
        print("%s against %s: the sandbox adds %+.0f ms to the median job (%.0f ms against %.0f ms), "
              "%+.0f ms to the median CLI process (start to exit), %+.0f ms to the makespan"
              % (v, twin, statistics.median(dur_a) - statistics.median(dur_b), statistics.median(dur_a), statistics.median(dur_b),
                 statistics.median(a[2]) - statistics.median(b[2]), a[0] - b[0]))


if __name__ == "__main__":
    main()
