#!/usr/bin/env bash
# bump-claude.sh VERSION: move the newest pinned Claude Code CLI to VERSION
# (tools/claude/package.json, its lockfile through npm, the Makefile), install
# it, and run the suite on it. The oldest supported pin (tools/claude-old) stays.
set -euo pipefail
if [ $# -ne 1 ] || ! [[ $1 =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "usage: $0 VERSION   (for example 2.1.332; see: npm view @anthropic-ai/claude-code version)" >&2
  exit 2
fi
version=$1
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/tools/claude"
npm install --package-lock-only --save-exact --no-audit --no-fund --loglevel=error \
  "@anthropic-ai/claude-code@$version"
grep -q "\"@anthropic-ai/claude-code\": \"$version\"" package.json ||
  { echo "tools/claude/package.json does not pin $version" >&2; exit 1; }
cd "$root"
sed -i.bak -E "s/^(CLAUDE_VERSION[[:space:]]*:= ).*/\1$version/" Makefile && rm Makefile.bak
grep -qE "^CLAUDE_VERSION[[:space:]]*:= $version\$" Makefile ||
  { echo "Makefile: CLAUDE_VERSION was not moved to $version" >&2; exit 1; }
echo "pinned @anthropic-ai/claude-code $version; running the suite"
make claude
make test
