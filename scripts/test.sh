#!/usr/bin/env bash
# Install what is missing, build, and run every test twice: an optimised build and an
# AddressSanitizer + UndefinedBehaviorSanitizer build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc)

echo "== optimised build"
# The benchmarks are not tests: bench/ scripts build their own targets when they run. -O2, not
# CMake's -O3: a third less compile time, and the hot loops are intrinsics or vectorise at -O2.
# The Python module is built for, and its tests run by, Debian's interpreter (which has the
# python3-pybind11 and python3-pytest packages), whatever python3 comes first on PATH.
python=()
[ -x /usr/bin/python3 ] && python=(-DPython3_EXECUTABLE=/usr/bin/python3)
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
      -DDNNCOST_BUILD_BENCH=OFF "${python[@]}" >/dev/null
cmake --build build/release -j "$jobs"
ctest --test-dir build/release --output-on-failure -j "$jobs"

echo "== sanitizer build (ASan + UBSan)"
# -O1 -g1: sanitizer builds of Eigen-heavy code compile far faster than at -O2 -g and still
# give symbolised stack traces. No -march=native here: this pass also checks the portable
# (non-AVX-512) code path, and avoids GCC 12's false-positive -Wuninitialized reports inside
# its own avx512fintrin.h at -O1.
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -g1" -DDNNCOST_SANITIZE=ON -DDNNCOST_NATIVE=OFF \
      -DDNNCOST_BUILD_BENCH=OFF -DDNNCOST_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs"
