#!/usr/bin/env bash
# parrayc_install_check.sh BUILD_DIR WORK_DIR FIG10: installs the build into a
# fresh prefix, then builds the out-of-tree project install/parrayc_consumer
# (find_package(parray) and parray_add_executable) from the paper's fig 10 in
# the Parray language, and runs it: its check against the FP64 product must
# pass.
set -euo pipefail
build=$1 work=$2 fig10=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
[ -x "$work/prefix/bin/parrayc" ] || { echo "not installed: bin/parrayc"; exit 1; }
[ -e "$work/prefix/lib/cmake/parray/parrayc.cmake" ] || { echo "not installed: lib/cmake/parray/parrayc.cmake"; exit 1; }
cmake -S "$here/install/parrayc_consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_BUILD_TYPE=Release -DPARRAY_FIG10="$fig10" >"$work/configure.log"
cmake --build "$work/cmake" >"$work/build.log"
"$work/cmake/fig10" 256
