#!/usr/bin/env bash
# The GitHub Action's step (action.yml): install lmi-config, write SARIF, annotate, exit as lint does.
# Inputs come as INPUT_* variables; LMI_CONFIG_SKIP_INSTALL=1 uses the lmi-config already on PATH (tests).
set -uo pipefail

paths=${INPUT_PATHS:-.}
sarif=${INPUT_SARIF_FILE:-lmi-config.sarif}
if [ "${LMI_CONFIG_SKIP_INSTALL:-0}" != "1" ]; then
  python -m pip install -q "${INPUT_INSTALL:-${GITHUB_ACTION_PATH:?}}" || exit 2
fi

read -r -a path_list <<< "$paths"
read -r -a extra <<< "${INPUT_ARGS:-}"

# one lint run for the report, one for the annotations: both read the same files with the same flags
lmi-config lint "${path_list[@]}" "${extra[@]}" --format sarif > "$sarif"
status=$?
lmi-config lint "${path_list[@]}" "${extra[@]}" --format github
if [ "$status" -ge 2 ] && [ ! -s "$sarif" ]; then
  rm -f "$sarif"  # nothing to upload from an unusable run; the message above says why
fi
echo "exit-code=$status" >> "${GITHUB_OUTPUT:-/dev/null}"
exit "$status"
