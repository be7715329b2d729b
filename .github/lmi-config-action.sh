#!/usr/bin/env bash
# The GitHub Action's step (action.yml): install lmi-config, write SARIF, annotate, exit as lint does.
# Inputs come as INPUT_* variables; LMI_CONFIG_SKIP_INSTALL=1 uses the lmi-config already on PATH (tests).
set -uo pipefail

sarif=${INPUT_SARIF_FILE:-lmi-config.sarif}
if [ "${LMI_CONFIG_SKIP_INSTALL:-0}" != "1" ]; then
  python -m pip install -q "${INPUT_INSTALL:-${GITHUB_ACTION_PATH:?}}" || exit 2
fi

# `paths` and `args` are lists as a workflow writes them: words separated by blanks or newlines (a
# `paths: |` block of one directory a line, or a changed-files output). Split on blanks, tabs and
# newlines only, with globbing off, so that `*` or `?` in a name stays the name.
set -f
IFS=$' \t\n'
# shellcheck disable=SC2206  # word splitting is what reads the list
path_list=(${INPUT_PATHS:-})
# shellcheck disable=SC2206
extra=(${INPUT_ARGS:-})
set +f
if [ "${#path_list[@]}" -eq 0 ]; then
  path_list=(.)
fi

# one lint run for the report, one for the annotations: both read the same files with the same flags;
# the paths come after `--`, so that a file named `--ignore=LMI3` is a file, not an option
lmi-config lint "${extra[@]}" --format sarif -- "${path_list[@]}" > "$sarif"
status=$?
lmi-config lint "${extra[@]}" --format github -- "${path_list[@]}"
if [ "$status" -ge 2 ] && [ ! -s "$sarif" ]; then
  rm -f "$sarif"  # nothing to upload from an unusable run; the message above says why
fi
echo "exit-code=$status" >> "${GITHUB_OUTPUT:-/dev/null}"
exit "$status"
