#!/usr/bin/env bash
# A fake runner for the compression tests: speaks the runner protocol (docs/measure.md) with a
# latency that grows with the model file's size (1 ms per MB plus 0.5 ms), so that pruned
# networks are faster, and misbehaves as MODE says.
#   fake_runner.sh MODE STATE_DIR
#   good      answer every request
#   slow      answer after 0.3 s
#   flaky     requests 3, 8, 13, ... (counted over all processes) crash, hang or print garbage in turn
#   accuracy  answer {"accuracy": ...} from the file size instead (an accuracy command)
#   bad_accuracy  an accuracy command that answers garbage for every third request
# Every request's model file name is appended to STATE_DIR/requests.log.
mode=$1 state=$2
echo '{"device":{"name":"fake-compress","mode":"'"$mode"'"}}'
while IFS= read -r line; do
  [[ $line =~ \"id\":([0-9]+) ]] && id=${BASH_REMATCH[1]}
  [[ $line =~ \"model\":\"([^\"]*)\" ]] && model=${BASH_REMATCH[1]}
  [[ $line =~ \"repeats\":([0-9]+) ]] && repeats=${BASH_REMATCH[1]}
  basename "$model" >> "$state/requests.log"
  n=$(wc -l < "$state/requests.log")
  size=$(stat -c %s "$model" 2>/dev/null || echo 0)
  value=$(awk -v s="$size" 'BEGIN { printf "%.6f", 0.5 + s / 1e6 }')
  case $mode in
    accuracy)
      printf '{"id":%s,"accuracy":%s}\n' "$id" "$(awk -v s="$size" 'BEGIN { printf "%.6f", 1 - 1 / (1 + s / 1e6) }')"
      continue ;;
    bad_accuracy)
      if (( n % 3 == 0 )); then echo "accuracy: loading $model"; continue; fi
      printf '{"id":%s,"accuracy":0.5}\n' "$id"
      continue ;;
    slow) sleep 0.3 ;;
    flaky)
      if (( n % 5 == 3 )); then
        case $(( (n / 5) % 3 )) in
          0) echo "fake: crash on request $n" >&2; exit 3 ;;
          1) sleep 1000 & wait ;;
          2) echo "segfault? not JSON"; continue ;;
        esac
      fi ;;
  esac
  list=""
  for ((k = 0; k < repeats; ++k)); do list+="${list:+,}$value"; done
  printf '{"id":%s,"latency_ms":[%s]}\n' "$id" "$list"
done
