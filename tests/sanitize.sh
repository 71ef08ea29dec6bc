#!/usr/bin/env bash
# sanitize.sh COMPUTE_SANITIZER TOOL TEST_BINARY GTEST_FILTER: one
# compute-sanitizer tool over a filtered set of GPU tests. Skips (77) without a
# GPU or without compute-sanitizer; fails when the filter selects no test
# (a sanitizer run over nothing proves nothing) or the tool reports an error.
set -uo pipefail
cs=$1 tool=$2 bin=$3 filter=$4
if [ ! -x "$cs" ]; then echo "compute-sanitizer not found: skipped"; exit 77; fi
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
out=$("$cs" --tool "$tool" --error-exitcode 1 "$bin" --gtest_brief=1 --gtest_filter="$filter" 2>&1)
rc=$?
echo "$out" | tail -n 40
ran=$(echo "$out" | sed -n 's/^\[==========\] \([0-9]*\) tests\? from .* ran\..*/\1/p' | tail -n 1)
if [ -z "$ran" ] || [ "$ran" -eq 0 ]; then echo "the filter '$filter' selected no test"; exit 1; fi
# memcheck ends with "ERROR SUMMARY: 0 errors", racecheck with
# "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)".
echo "$out" | grep -qE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors" ||
  { echo "$tool reported errors"; exit 1; }
exit $rc
