#!/usr/bin/env bash
# bump-claude.sh VERSION: move the newest pinned Claude Code CLI to VERSION
# (tools/claude-next/package.json, its lockfile through npm, the Makefile),
# install it, and run the whole suite on it (make test-next, the suite
# `make test` runs, without -race). A failure there is what the bump broke:
# follow the CLI in the test bed or pneuma, then run `make test`. The oldest
# supported pin (tools/claude, CLAUDE_VERSION) moves only when support for
# older CLIs is dropped (README, "Claude Code versions").
set -euo pipefail
if [ $# -ne 1 ] || ! [[ $1 =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "usage: $0 VERSION   (for example 2.1.332; see: npm view @anthropic-ai/claude-code version)" >&2
  exit 2
fi
version=$1
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/tools/claude-next"
npm install --package-lock-only --save-exact --no-audit --no-fund --loglevel=error \
  "@anthropic-ai/claude-code@$version"
grep -q "\"@anthropic-ai/claude-code\": \"$version\"" package.json ||
  { echo "tools/claude-next/package.json does not pin $version" >&2; exit 1; }
cd "$root"
sed -i.bak -E "s/^(CLAUDE_NEXT_VERSION[[:space:]]*:= ).*/\1$version/" Makefile && rm Makefile.bak
grep -qE "^CLAUDE_NEXT_VERSION[[:space:]]*:= $version\$" Makefile ||
  { echo "Makefile: CLAUDE_NEXT_VERSION was not moved to $version" >&2; exit 1; }
echo "pinned @anthropic-ai/claude-code $version; running the suite"
make test-next
