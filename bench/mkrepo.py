#!/usr/bin/env python3
"""Writes a git fast-import stream of one commit on refs/heads/main holding N
small Go files (default 10000) spread over directories of 100, for
scripts/bench-run.sh:  python3 bench/mkrepo.py 10000 | git fast-import --quiet
"""
import sys

def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    out = sys.stdout.buffer
    msg = b"bench: %d files\n" % n
    out.write(b"commit refs/heads/main\n")
    out.write(b"author bench <bench@pneuma.invalid> 1795000000 +0000\n")
    out.write(b"committer bench <bench@pneuma.invalid> 1795000000 +0000\n")
    out.write(b"data %d\n%s" % (len(msg), msg))
    for i in range(n):
        pkg = i // 100
        body = (
            b"package p%03d\n\n// F%05d is file %d of the benchmark repository.\n"
            b"func F%05d() int { return %d }\n" % (pkg, i, i, i, i)
        )
        out.write(b"M 100644 inline src/p%03d/f%05d.go\n" % (pkg, i))
        out.write(b"data %d\n%s\n" % (len(body), body))
    out.write(b"\n")

if __name__ == "__main__":
    main()
