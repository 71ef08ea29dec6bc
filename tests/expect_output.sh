#!/usr/bin/env bash
# expect_output.sh STATUS REGEX COMMAND...: runs COMMAND, shows its output and
# passes only when COMMAND exits with STATUS (a number, or "nonzero") and its
# output (stdout and stderr together) matches REGEX (Perl syntax; '.' also
# matches a newline). ctest's PASS_REGULAR_EXPRESSION alone ignores the exit
# status, so a program that printed "check ok" and then failed would pass.
# Exit status 77 (skipped) is passed through.
set -uo pipefail
want=$1 regex=${2//$'\n'/\\n}  # a newline in the pattern as \n: grep would split the pattern there
shift 2
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
[ "$status" -eq 77 ] && exit 77
if [ "$want" = nonzero ]; then
  [ "$status" -ne 0 ] || { echo "FAILED: exit status 0, expected a failure"; exit 1; }
else
  [ "$status" -eq "$want" ] || { echo "FAILED: exit status $status, expected $want"; exit 1; }
fi
printf '%s\n' "$out" | grep -Pzq -- "(?s)$regex" || { echo "FAILED: the output does not match: $regex"; exit 1; }
exit 0
