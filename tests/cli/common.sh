# Shared setup of the CLI test scripts: `source` it with the script's three arguments.
#   bin: the dnncost binary; data: the data directory; work: a scratch directory (recreated, entered)
# and fail MESSAGE: count and print a failure; finish NAME: print the summary, exit 0 only without failures.
set -uo pipefail
bin=$1 data=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
finish() {
  [ $failures -eq 0 ] && echo "$1: all checks passed" || echo "$1: $failures failure(s)"
  [ $failures -eq 0 ]
  exit $?
}
