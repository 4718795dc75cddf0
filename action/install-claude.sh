#!/usr/bin/env bash
# Installs the Claude Code CLI for pneuma's GitHub Action: CLAUDE_CODE_VERSION,
# else the version pneuma is tested against (tools/claude/package.json);
# "none" installs nothing (bring your own claude, or set PNEUMA_CLAUDE).
set -euo pipefail

version="${CLAUDE_CODE_VERSION:-}"
if [ "$version" = none ]; then
  echo "Claude Code: not installed (claude-code-version: none)"
  exit 0
fi
if [ -z "$version" ]; then
  version=$(sed -n 's/.*"@anthropic-ai\/claude-code": *"\([^"]*\)".*/\1/p' "${GITHUB_ACTION_PATH:?}/tools/claude/package.json")
fi
if [ -z "$version" ]; then
  echo "::error::no Claude Code version in tools/claude/package.json" >&2
  exit 1
fi
npm install --global --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@${version}"
