#!/usr/bin/env bash
# check_install.sh BUILD_DIR WORK_DIR: installs the build into a fresh prefix,
# then builds and runs the consumer project against it twice, through
# find_package(parray) and through pkg-config. Any failure fails the test.
set -euo pipefail
build=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
for f in include/parray/gemm.hpp include/parray/config.hpp lib/libparray.a lib/libparray_blas.so bin/parray \
         lib/cmake/parray/parrayConfig.cmake lib/pkgconfig/parray.pc; do
  [ -e "$work/prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
"$work/prefix/bin/parray" --version
cmake -S "$here/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log"
cmake --build "$work/cmake" >"$work/build.log"
"$work/cmake/consumer"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
echo "pkg-config parray $(pkg-config --modversion parray)"
# shellcheck disable=SC2046
c++ -O2 "$here/consumer/main.cpp" -o "$work/consumer-pc" $(pkg-config --cflags --libs parray)
"$work/consumer-pc"
