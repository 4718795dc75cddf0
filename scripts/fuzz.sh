#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a fixed time each ($1, default 10s).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-10s}"
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "fuzz $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
  done
done
