#!/usr/bin/env bash
# Lints pneuma's GitHub Action and the example workflows with actionlint, a Go
# module pinned here and built through the Go toolchain (make actionlint).
#
# actionlint lints workflows, not action.yml on its own: it reads an action's
# metadata when a workflow of a project uses it as a local action. So the
# workflows are linted twice: as they are, and inside a scratch project that
# holds action.yml, with `uses: pneuma-cli/pneuma@...` made `uses: ./` (and
# action/testdata/uses-action.yml, which uses every input and output), so a
# misspelled input or output fails here.
set -euo pipefail

ACTIONLINT=github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

GOBIN="$tmp/bin" "$GO" install "$ACTIONLINT"
lint() { "$tmp/bin/actionlint" -shellcheck= -pyflakes= "$@"; }

workflows=("$root"/examples/github-*.yml)
lint "${workflows[@]}"

project="$tmp/project"
mkdir -p "$project/.git" "$project/.github/workflows"
cp "$root/action.yml" "$project/"
cp "$root/action/testdata/uses-action.yml" "$project/.github/workflows/"
for wf in "${workflows[@]}"; do
  sed 's#uses: pneuma-cli/pneuma@[^ ]*#uses: ./#' "$wf" > "$project/.github/workflows/$(basename "$wf")"
done
(cd "$project" && lint)
echo "actionlint: action.yml and ${#workflows[@]} example workflow(s) are clean"
