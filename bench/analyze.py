#!/usr/bin/env python3
"""Prints the figures of scripts/bench-run.sh and checks the targets of
issue 3. Usage: analyze.py SCRATCH_DIR VARIANT...; SCRATCH_DIR holds
baseline/ (times, makespan_us) and one directory per pneuma variant
(events.jsonl, run.json, report.json, cli_times, makespan_us, vmhwm_kb,
exit).
Exits 1 when the first variant misses a target, 2 when data is missing.

pneuma's own overhead per job is
    duration_ms (report.json: job start to end, after commit, diff stats,
    transcript archive and worktree removal)
  - the CLI process's wall time (cli_times, written by bench/claudetimed,
    the --claude wrapper: its own start-up, about a millisecond, counts as pneuma's;
    report.json attempts[].duration_ms would do, but runner records 0 there)
  - the worktree phase (run.json started_at to the job_started event, which
    holds `git worktree add` and also pneuma's .git/info/exclude check,
    mkdir and one journal save: those few ms are counted as git's, so the
    figure is a slight underestimate).
"""
import json
import os
import statistics
import sys
from datetime import datetime

MAKESPAN_RATIO = 1.05
OVERHEAD_MS = 20.0
RSS_KB = 64 * 1024


def ts(s):
    # RFC 3339 with up to nanoseconds; Python takes microseconds.
    s = s.replace("Z", "+00:00")
    if "." in s:
        head, rest = s.split(".", 1)
        frac, tz = rest[:rest.index("+")], rest[rest.index("+"):]
        s = head + "." + (frac + "000000")[:6] + tz
    return datetime.fromisoformat(s).timestamp()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def line(label, xs):
    return "%-34s median %7.1f  p90 %7.1f  max %7.1f ms" % (label, statistics.median(xs), pct(xs, 90), max(xs))


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
    started = {}
    with open(os.path.join(d, "events.jsonl")) as f:
        for l in f:
            e = json.loads(l)
            if e.get("type") == "job_started":
                started[e["job"]] = ts(e["time"])
    journal = json.load(open(os.path.join(d, "run.json")))
    begun = {j["name"]: ts(j["started_at"]) for j in journal["jobs"] if j.get("started_at")}
    rep = json.load(open(os.path.join(d, "report.json")))
    cli_ms = {}  # job name (its worktree's base name) -> CLI wall time, summed over attempts
    cli_span = {}  # job name -> (first CLI start, last CLI exit), seconds
    with open(os.path.join(d, "cli_times")) as f:
        for l in f:
            cwd, t0, t1 = l.rsplit(" ", 2)
            name = os.path.basename(cwd)
            t0, t1 = int(t0) / 1e6, int(t1) / 1e6
            cli_ms[name] = cli_ms.get(name, 0) + (t1 - t0) * 1000
            a, b = cli_span.get(name, (t0, t1))
            cli_span[name] = (min(a, t0), max(b, t1))
    wt, cli, over, pre, post, bad = [], [], [], [], [], []
    for j in rep["jobs"]:
        if j["status"] != "succeeded":
            bad.append("%s: %s %s" % (j["name"], j["status"], j.get("reason", "")))
        if j["name"] not in started or j["name"] not in begun or j["name"] not in cli_ms:
            continue
        w = (started[j["name"]] - begun[j["name"]]) * 1000
        c = cli_ms[j["name"]]
        wt.append(w)
        cli.append(c)
        over.append(j["duration_ms"] - c - w)
        first, last = cli_span[j["name"]]
        pre.append((first - started[j["name"]]) * 1000)
        post.append((begun[j["name"]] + j["duration_ms"] / 1000 - last) * 1000)
    ms = int(open(os.path.join(d, "makespan_us")).read()) / 1000
    rss = int(open(os.path.join(d, "vmhwm_kb")).read())
    code = int(open(os.path.join(d, "exit")).read())
    # report.json timings: where each job's time went, by pneuma's own clock.
    timings = {}
    own = []
    for j in rep["jobs"]:
        t = j.get("timings") or {}
        for k, v in t.items():
            timings.setdefault(k, []).append(v)
        if t:
            # What is left when the CLI and every git command are taken out:
            # pneuma's own code (scheduling, stream parsing, journal, archive).
            own.append(j["duration_ms"] - sum(t[k] for k in ("worktree_ms", "wait_ms", "cli_ms", "commit_ms", "diff_ms", "remove_ms")))
    return ms, wt, cli, over, pre, post, rss, code, bad, len(rep["jobs"]), timings, own


def main():
    root, variants = sys.argv[1], sys.argv[2:]
    b_ms, b_wt, b_cli = baseline(os.path.join(root, "baseline"))
    print("baseline (xargs + git worktree add + claude -p --output-format json)")
    print("  makespan %.0f ms, %d jobs" % (b_ms, len(b_wt)))
    print("  " + line("git worktree add", b_wt))
    print("  " + line("claude process", b_cli))
    status = 0
    for i, v in enumerate(variants):
        ms, wt, cli, over, pre, post, rss, code, bad, n, timings, own = pneuma(os.path.join(root, v))
        print(v)
        print("  makespan %.0f ms (%.3f x baseline), %d jobs, exit %d, peak RSS %.1f MB" % (ms, ms / b_ms, n, code, rss / 1024))
        if not over:
            print("  no job timings")
            status = status or (2 if i == 0 else 0)
            continue
        print("  " + line("worktree phase", wt))
        print("  " + line("claude process", cli))
        print("  " + line("pneuma overhead per job", over))
        print("  " + line("  of which job_started -> CLI start", pre))
        print("  " + line("  of which CLI exit -> job end", post))
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
    sys.exit(status)


if __name__ == "__main__":
    main()
