#!/usr/bin/env bash
# usage: run.sh MODE SOURCE_DIR WORK_DIR   (MODE = find_package | subdirectory)
set -euo pipefail
mode=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
if [ "$mode" = find_package ]; then
  # the headers alone: no compiled library is built or installed
  cmake -S "$src" -B "$work/dnncost-build" -DDNNCOST_BUILD_TESTS=OFF -DDNNCOST_BUILD_EXAMPLES=OFF \
        -DDNNCOST_BUILD_BENCH=OFF -DDNNCOST_BUILD_COMPILED=OFF -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
  cmake --install "$work/dnncost-build" >/dev/null
  cmake -S "$src/tests/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
else
  cmake -S "$src/tests/consumer" -B "$work/consumer" -DUSE_SUBDIRECTORY=ON -DDNNCOST_SOURCE_DIR="$src" >/dev/null
fi
cmake --build "$work/consumer" -j 2 >/dev/null
"$work/consumer/consumer"
if [ -x "$work/consumer/consumer_onnx" ]; then
  "$work/consumer/consumer_onnx" "$src/data"
fi
