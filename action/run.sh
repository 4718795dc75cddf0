#!/usr/bin/env bash
# Runs `pneuma run` for pneuma's GitHub Action with its inputs (INPUT_*).
# pneuma itself writes the step outputs to $GITHUB_OUTPUT, the summary to
# $GITHUB_STEP_SUMMARY and the annotations, as it does without the action.
set -euo pipefail

args=(run "${INPUT_JOBS:?the jobs input is empty}")
if [ -n "${INPUT_CONCURRENCY:-}" ]; then args+=(--concurrency "$INPUT_CONCURRENCY"); fi
if [ -n "${INPUT_BUDGET_USD:-}" ]; then args+=(--budget-usd "$INPUT_BUDGET_USD"); fi
shard="${INPUT_SHARD:-}"
if [ -z "$shard" ] && [ "${MATRIX_JOB_TOTAL:-1}" -gt 1 ]; then
  shard="$((MATRIX_JOB_INDEX + 1))/${MATRIX_JOB_TOTAL}" # a matrix job: one shard each
fi
if [ -n "$shard" ]; then args+=(--shard "$shard"); fi
if [ -n "${INPUT_REPORT:-}" ]; then args+=(--report "$INPUT_REPORT"); fi
if [ -n "${INPUT_JUNIT:-}" ]; then args+=(--junit "$INPUT_JUNIT"); fi
if [ -n "${INPUT_ARGS:-}" ]; then
  read -r -a extra <<< "$INPUT_ARGS" # split on whitespace; no quotes, no globs
  args+=("${extra[@]}")
fi
echo "pneuma ${args[*]}"
exec pneuma "${args[@]}"
