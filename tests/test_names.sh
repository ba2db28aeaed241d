#!/usr/bin/env bash
# doctest_discover_tests splits the list of test names at ';', so a test case whose name holds one
# would be registered as two names that match nothing and "pass" without running. Refuse them.
# usage: test_names.sh TESTS_DIR
set -uo pipefail
bad=$(grep -nE 'TEST_CASE(_TEMPLATE)?\("[^"]*;' "$1"/*.cpp)
if [ -n "$bad" ]; then
  echo "test case names must not contain ';' (ctest would not run them):"
  echo "$bad"
  exit 1
fi
echo "ok: no test case name contains ';'"
