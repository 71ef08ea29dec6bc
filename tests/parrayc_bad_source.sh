#!/usr/bin/env bash
# parrayc_bad_source.sh PARRAY PARRAYC WORK_DIR: a Parray source with an
# error, through `parray translate` and `parrayc -o`: each prints one line
# that starts FILE:LINE:COLUMN: error: (as an editor reads a compiler's
# messages) and says "error" once, exits with status 2 and writes no output
# file; a good source translates with status 0.
set -uo pipefail
parray=$1 parrayc=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
printf '#parray {paged float [4][3]} A\nx = $A[1][2][3]$;\n' >"$work/bad.pa"
printf '#parray {paged float [4][3]} A\nx = $A[1][2]$;\n' >"$work/good.pa"
expect='bad.pa:2:7: error: A has 2 dimensions, 3 indices given'
fail() { echo "FAILED: $*"; exit 1; }
check_bad() {
  local name=$1
  shift
  "$@" >"$work/stdout" 2>"$work/stderr"
  local status=$?
  [ $status -eq 2 ] || fail "$name: exit status $status, not 2"
  [ "$(wc -l <"$work/stderr")" -eq 1 ] || fail "$name: stderr is not one line: $(cat "$work/stderr")"
  grep -qF "$expect" "$work/stderr" || fail "$name: stderr lacks '$expect': $(cat "$work/stderr")"
  case "$(cat "$work/stderr")" in
    "$work/bad.pa:2:7: error: "*) ;;
    *) fail "$name: the message does not start with FILE:LINE:COLUMN: error: $(cat "$work/stderr")" ;;
  esac
  [ "$(grep -o 'error' "$work/stderr" | wc -l)" -eq 1 ] || fail "$name: says 'error' more than once: $(cat "$work/stderr")"
  [ ! -e "$work/out.cpp" ] || fail "$name: wrote an output file for a bad source"
}
check_bad "parray translate" "$parray" translate "$work/bad.pa"
check_bad parrayc "$parrayc" "$work/bad.pa" -o "$work/out.cpp"
"$parrayc" "$work/good.pa" -o "$work/good.cpp" || fail "parrayc: a good source was refused"
grep -q 'parray_pa_A.type().sub(0).offset(1)' "$work/good.cpp" || fail "parrayc: the translation is not in good.cpp"
"$parray" translate "$work/good.pa" | grep -q '^#line 1 ' || fail "parray translate: no translation on stdout"
echo "parrayc and parray translate: bad source refused in one line with status 2, good source translated"
