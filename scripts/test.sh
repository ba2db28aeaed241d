#!/usr/bin/env bash
# Install what is missing, then build and run every test once, in two builds that each compile
# what they run:
#   1. optimised (-O1, -march=native): the library, the CLI, the examples and the Python module;
#      the end-to-end tests (tests/cli, tests/hostile, tests/consumer, tests/python).
#   2. AddressSanitizer + UndefinedBehaviorSanitizer: the library and every unit-test executable.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc)

echo "== optimised build: the CLI end to end"
# The benchmarks are not tests: bench/ scripts build their own targets when they run. -O1, not
# CMake's -O3 or the demo's -O2: this build only runs the end-to-end tests, which spend their time
# in the runtime, the shell and the compilers they call, and -O1 compiles the library in a third
# less time than -O2. Users' builds, the demo's and the benchmarks' stay at -O2 or above.
# The Python module is built for, and its tests run by, Debian's interpreter (which has the
# python3-pybind11 and python3-pytest packages), whatever python3 comes first on PATH.
python=()
[ -x /usr/bin/python3 ] && python=(-DPython3_EXECUTABLE=/usr/bin/python3)
source scripts/generator.sh
generator_for build/release
cmake -S . -B build/release "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
      -DDNNCOST_BUILD_BENCH=OFF -DDNNCOST_UNIT_TESTS=OFF "${python[@]}" >/dev/null
cmake --build build/release -j "$jobs"
ctest --test-dir build/release --output-on-failure -j "$jobs"

echo "== sanitizer build (ASan + UBSan): the unit tests"
# -Og -g1: the sanitizers' instrumentation is most of such a build's compile time, and -Og
# optimises it far less than -O1 while keeping the tests' run time close; -g1 still gives
# symbolised stack traces. No -march=native here: this pass also checks the portable
# (non-AVX-512) code path; the bf16/AMX kernels are chosen at run time either way.
generator_for build/asan
cmake -S . -B build/asan "${generator[@]}" -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-Og -g1" -DDNNCOST_SANITIZE=ON -DDNNCOST_NATIVE=OFF \
      -DDNNCOST_BUILD_BENCH=OFF -DDNNCOST_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/asan -j "$jobs"
# Fresh heap memory is filled with 0xff bytes, a NaN as a double: a value read before it is
# written then shows in the results (ASan's default fill, 0xbe, reads as a small finite number).
ASAN_OPTIONS=detect_leaks=1:malloc_fill_byte=255:max_malloc_fill_size=1073741824 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs"
