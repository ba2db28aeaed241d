#!/usr/bin/env bash
# A compiler launcher that records each compile's wall time and peak memory: set
#   -DCMAKE_CXX_COMPILER_LAUNCHER=/path/to/launcher.sh and DNNCOST_COMPILE_LOG=/path/to/log.tsv
# Each line of the log: seconds, peak MiB, the object file.
set -uo pipefail
log=${DNNCOST_COMPILE_LOG:?set DNNCOST_COMPILE_LOG}
out=unknown
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [ "${args[$i]}" = "-o" ] && out=${args[$((i + 1))]}
done
stats=$(mktemp)
/usr/bin/time -f "%e %M" -o "$stats" "$@"
rc=$?
read -r secs kib <"$stats"
rm -f "$stats"
printf '%s\t%d\t%s\n' "$secs" $((kib / 1024)) "$out" >>"$log"
exit $rc
