#!/bin/bash
# One of netlib's BLAS test programs (Debian's libblas-test) on ?GEMM only,
# with libparray_blas.so preloaded: xblat3s/xblat3d call sgemm_/dgemm_ and
# x?cblat3 calls cblas_?gemm in both layouts. Each defines its own XERBLA /
# cblas_xerbla, calls GEMM with every illegal argument and checks the routine
# name and parameter number it is given, then checks GEMM's results. Passes
# only when both parts pass and the dynamic linker bound GEMM to
# libparray_blas.so and its error calls to the program's handler.
# usage: netlib_tester.sh LIBPARRAY_BLAS BLAS_TEST_DIR s|d fortran|cblas
# Exit 77 (ctest SKIP_RETURN_CODE) when the test programs are not installed.
set -eu
lib=$1 dir=$2 p=$3 api=$4
P=${p^^}
skip() { echo "SKIP: $1"; exit 77; }

# Sizes up to 64 (the programs take at most 65) so that more than parray's
# small-product path runs; alpha and beta include 0 and 1 (the quick returns).
values="9                 NUMBER OF VALUES OF N
0 1 2 3 5 9 16 33 64 VALUES OF N
3                 NUMBER OF VALUES OF ALPHA
0.0 1.0 0.7       VALUES OF ALPHA
3                 NUMBER OF VALUES OF BETA
0.0 1.0 1.3       VALUES OF BETA"
head="-1                UNIT NUMBER OF SNAPSHOT FILE (NOT USED IF .LT. 0)
F        LOGICAL FLAG, T TO REWIND SNAPSHOT FILE AFTER EACH RECORD.
F        LOGICAL FLAG, T TO STOP ON FAILURES.
T        LOGICAL FLAG, T TO TEST ERROR EXITS."

if [ "$api" = fortran ]; then
  prog=$dir/xblat3$p name=${P}GEMM entry=${p}gemm_ handler=xerbla_ summary=${P}BLAT3.SUMM
  input="'$summary'     NAME OF SUMMARY OUTPUT FILE
6                 UNIT NUMBER OF SUMMARY FILE
'${P}BLAT3.SNAP'     NAME OF SNAPSHOT OUTPUT FILE
$head
16.0     THRESHOLD VALUE OF TEST RATIO
$values
$name  T PUT F FOR NO TEST. SAME COLUMNS."
  passed=("$name +PASSED THE TESTS OF ERROR-EXITS" "$name +PASSED THE COMPUTATIONAL TESTS")
else
  # The CBLAS tester takes RowMajorStrg from netlib's own libblas.so.3 (with
  # CBLAS); the rest of its BLAS comes from there too.
  prog=$dir/x${p}cblat3 name=cblas_${p}gemm entry=cblas_${p}gemm handler=cblas_xerbla summary=${P}CBLAT3.SUMM
  [ -e "$dir/libblas.so.3" ] || skip "$dir/libblas.so.3 (netlib's BLAS and CBLAS, Debian: libblas3) not installed"
  export LD_LIBRARY_PATH=$dir
  input="'${P}CBLAT3.SNAP'     NAME OF SNAPSHOT OUTPUT FILE
$head
2        0 TO TEST COLUMN-MAJOR, 1 TO TEST ROW-MAJOR, 2 TO TEST BOTH
16.0     THRESHOLD VALUE OF TEST RATIO
$values
$name  T PUT F FOR NO TEST. SAME COLUMNS."
  passed=("$name +PASSED THE TESTS OF ERROR-EXITS" "$name +PASSED THE COLUMN-MAJOR COMPUTATIONAL TESTS"
          "$name +PASSED THE ROW-MAJOR +COMPUTATIONAL TESTS")
fi
[ -x "$prog" ] || skip "$prog not installed (Debian: libblas-test)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# The CBLAS tester writes its summary to standard output.
LD_PRELOAD=$lib LD_DEBUG=bindings LD_DEBUG_OUTPUT=$work/ld "$prog" <<<"$input" >"$work/stdout" 2>&1 || {
  cat stdout; echo "FAIL: $prog exited with status $?"; exit 1; }
[ "$api" = fortran ] || mv stdout "$summary"

fail=0
if grep -E 'FAILED|NOT DETECTED|SUSPECT|\*\*\*\*\*' "$summary"; then fail=1; fi
for line in "${passed[@]}"; do
  grep -Eq "^ *$line" "$summary" || { echo "FAIL: no line '$line'"; fail=1; }
done
# Proof that parray was tested: who the dynamic linker bound GEMM and its handler to.
bound() { grep -h "normal symbol \`$1'" ld.* | grep -q "$2"; }
bound "$entry" "binding file $prog .* to $lib " || { echo "FAIL: $entry was not bound to $lib"; fail=1; }
bound "$handler" "binding file $lib .* to $prog " || { echo "FAIL: $lib's $handler was not bound to $prog"; fail=1; }
[ $fail = 0 ] || { echo "--- $summary:"; head -60 "$summary"; exit 1; }
echo "$name passed $prog's computational and error-exit tests: $(grep -Ec 'PASSED' "$summary") PASSED lines"
