#!/usr/bin/env bash
# A fake runner for the measuring tests: speaks the runner protocol (docs/measure.md) and
# misbehaves in the way MODE names. Requests come from dnncost, so the fields are found with
# plain pattern matching.
#   fake_runner.sh MODE [STATE_DIR]
# The base latency of a model is the number after "lat" at the start of its file name
# (lat2.5.onnx -> 2.5 ms), else 1; every timed run reports it. Profiled requests are logged in
# STATE_DIR/profiles.log as well.
mode=$1 state=${2:-/tmp}
answer() {  # answer ID MODEL REPEATS [SCALE]
  local id=$1 model=$2 repeats=$3 scale=${4:-1} base=1 name list=""
  name=$(basename "$model")
  [[ $name =~ ^lat([0-9]+(\.[0-9]+)?) ]] && base=${BASH_REMATCH[1]}
  local value
  value=$(awk -v b="$base" -v s="$scale" 'BEGIN { printf "%.6f", b * s }')
  for ((k = 0; k < repeats; ++k)); do list+="${list:+,}$value"; done
  printf '{"id":%s,"latency_ms":[%s]}\n' "$id" "$list"
}
case $mode in
  hang_model)  # a child in the runner's process group, started before the device line
    sleep 1000 & echo $! > "$state/hang_child.pid.tmp" && mv "$state/hang_child.pid.tmp" "$state/hang_child.pid" ;;
esac
case $mode in
  silent) ;;
  *) [ "$mode" = slow_device ] && sleep 2
     echo '{"device":{"name":"fake","mode":"'"$mode"'","pid":'$$'}}' ;;
esac
n=0
while IFS= read -r line; do
  n=$((n + 1))
  [[ $line =~ \"id\":([0-9]+) ]] && id=${BASH_REMATCH[1]}
  [[ $line =~ \"model\":\"([^\"]*)\" ]] && model=${BASH_REMATCH[1]}
  [[ $line =~ \"repeats\":([0-9]+) ]] && repeats=${BASH_REMATCH[1]}
  # the reference network dnncost measures with every run is logged apart: requests.log counts networks
  if [[ $(basename "$model") == reference.onnx ]]; then echo "$model" >> "$state/references.log"
  else echo "$model" >> "$state/requests.log"; echo "$(basename "$model") $repeats" >> "$state/repeats.log"
    if [[ $line == *'"keep":true'* ]]; then keep=keep; else keep=fresh; fi
    echo "$(basename "$model") $keep" >> "$state/sessions.log"
    [[ $line == *'"profile":true'* ]] && echo "$(basename "$model")" >> "$state/profiles.log"; fi
  case $mode in
    good|silent|slow_device) answer "$id" "$model" "$repeats" ;;
    drifting)  # as good, but the host slows down: each reference request answers 50 % slower than the last
      if [[ $(basename "$model") == reference.onnx ]]; then
        answer "$id" "$model" "$repeats" "$(awk -v n="$(wc -l < "$state/references.log")" 'BEGIN { print 1.5 ^ n }')"
      else answer "$id" "$model" "$repeats"; fi ;;
    spell)  # as good, but the host runs 50 % slower for a spell: while the 4th and 5th reference
      # requests are the last made, or the FROM-th to TO-th of each pair STATE_DIR/spell lists
      # ("FROM TO [FROM TO ...]")
      refs=$(wc -l < "$state/references.log" 2>/dev/null || echo 0) bounds=(4 5) slow=0
      [ -f "$state/spell" ] && read -r -a bounds < "$state/spell"
      for ((b = 0; b + 1 < ${#bounds[@]}; b += 2)); do
        (( refs >= bounds[b] && refs <= bounds[b + 1] )) && slow=1
      done
      if (( slow )); then answer "$id" "$model" "$repeats" 1.5
      else answer "$id" "$model" "$repeats"; fi ;;
    slow_spell)  # the host runs 50 % slower, every model alike, while STATE_DIR/slow_spell ("FROM TO")
      # says so: network requests FROM to TO (counted from 1), and the reference requests between two of them
      read -r from to < "$state/slow_spell"; nets=$(wc -l < "$state/requests.log" 2>/dev/null || echo 0)
      if [[ $(basename "$model") == reference.onnx ]]; then slow=$(( from <= nets && nets < to ))
      else slow=$(( from <= nets && nets <= to )); fi
      if (( slow )); then answer "$id" "$model" "$repeats" 1.5; else answer "$id" "$model" "$repeats"; fi ;;
    slow) sleep 0.2; answer "$id" "$model" "$repeats" ;;
    crash)  # the second request of every process kills it
      if [ $n -ge 2 ]; then echo "fake: simulated crash on request $n" >&2; exit 3; fi
      answer "$id" "$model" "$repeats" ;;
    crash_model)  # models named *crash* kill the runner with SIGSEGV
      if [[ $model == *crash* ]]; then echo "fake: segmentation fault in $model" >&2; kill -SEGV $$; fi
      answer "$id" "$model" "$repeats" ;;
    hang_model)  # models named *hang* never answer (the runner waits on its sleeping child)
      if [[ $model == *hang* ]]; then wait; fi
      answer "$id" "$model" "$repeats" ;;
    hang) sleep 1000 & echo $! > "$state/hang_child.pid"; wait ;;
    garbage) echo "Loading model $model ... done" ;;
    partial) printf '{"id":%s,"latency_ms":[1.0,' "$id"; exit 0 ;;
    oneshot) answer "$id" "$model" "$repeats"; exit 0 ;;
    exit_mid) if [ $n -ge 2 ]; then exit 0; fi; answer "$id" "$model" "$repeats" ;;
    nan) printf '{"id":%s,"latency_ms":[1.0,NaN]}\n' "$id" ;;
    negative) printf '{"id":%s,"latency_ms":[1.0,-0.5]}\n' "$id" ;;
    huge) printf '{"id":%s,"latency_ms":[1.0,1e308]}\n' "$id" ;;  # finite, but no data set keeps it
    missing) printf '{"id":%s,"peak_memory_bytes":100}\n' "$id" ;;
    wrong_id) printf '{"id":%s,"latency_ms":[1.0]}\n' "$((id + 1000))" ;;
    error) printf '{"id":%s,"error":"cannot load %s"}\n' "$id" "$model" ;;
    profile)  # profiles when asked: two kernels and the optimised model beside the request's
      if [[ $line == *'"profile":true'* ]]; then
        printf '{"id":%s,"latency_ms":[2.0],"kernels":[{"name":"c1","op":"Conv","ms":1.25},{"name":"add","op":"Add","ms":0.5}],"optimized_model":"%s.optimized.onnx"}\n' "$id" "${model%.onnx}"
      else answer "$id" "$model" "$repeats"; fi ;;
    planted)  # answers planted by the test: STATE_DIR/plant/MODEL.plain for a plain request,
      # MODEL.profile for a profiled one (the answer's fields after the id; MODEL.profile.first and
      # MODEL.plain.first, where there are, answer the model's first request of their kind); else
      # as good, without kernels.
      # While STATE_DIR/crash_after exists, it dies without answering once requests.log has more
      # lines than that file says. The reference requests whose numbers STATE_DIR/slow_references
      # lists (one a line, counted from 1) answer 50 % slower: a host slow for a while.
      if [[ $(basename "$model") == reference.onnx ]] && [ -f "$state/slow_references" ] &&
         grep -qx "$(wc -l < "$state/references.log")" "$state/slow_references"; then
        answer "$id" "$model" "$repeats" 1.5; continue; fi
      if [ -f "$state/crash_after" ] && [ "$(wc -l < "$state/requests.log")" -gt "$(cat "$state/crash_after")" ]; then
        echo "fake: simulated crash" >&2; exit 3; fi
      kind=plain; [[ $line == *'"profile":true'* ]] && kind=profile
      planted_file="$state/plant/$(basename "$model").$kind"
      if [ $kind = profile ] && [ -f "$planted_file.first" ] &&
         [ "$(grep -c -x -F "$(basename "$model")" "$state/profiles.log")" -eq 1 ]; then planted_file+=.first; fi
      if [ $kind = plain ] && [ -f "$planted_file.first" ]; then
        requests=$(grep -c -x -F "$model" "$state/requests.log") profiled=$(grep -s -c -x -F "$(basename "$model")" "$state/profiles.log")
        [ $(( requests - ${profiled:-0} )) -eq 1 ] && planted_file+=.first; fi
      if [ -f "$planted_file" ]; then printf '{"id":%s,%s}\n' "$id" "$(cat "$planted_file")"
      else answer "$id" "$model" "$repeats"; fi ;;
    bad_kernels)  # a kernel without its time
      printf '{"id":%s,"latency_ms":[2.0],"kernels":[{"name":"c1","op":"Conv"}]}\n' "$id" ;;
    memory) printf '{"id":%s,"latency_ms":[2.0,2.0],"peak_memory_bytes":4096,"energy_mj":1.5}\n' "$id" ;;
    size)  # a planted device: 0.02 ms per run plus 1 ms per 4 MB of model file (its weights)
      answer "$id" "$model" "$repeats" "$(awk -v b="$(stat -c %s "$model")" 'BEGIN { printf "%.6f", 0.02 + b / 4e6 }')" ;;
    noisy)  # models named *noisy* cycle through 1x, 1.2x and 1.4x their base, request by request
      if [[ $model == *noisy* ]]; then
        c=$(( $(grep -c -F "$model" "$state/requests.log") % 3 ))
        answer "$id" "$model" "$repeats" "1.$((2 * c))"
      else
        answer "$id" "$model" "$repeats"
      fi ;;
    barrier)  # the first request of each runner waits until two runners are busy at once
      touch "$state/busy.$$"
      for ((w = 0; w < 1200; ++w)); do [ "$(ls "$state" | grep -c '^busy\.')" -ge 2 ] && break; sleep 0.05; done
      if [ "$(ls "$state" | grep -c '^busy\.')" -ge 2 ]; then
        printf '{"id":%s,"latency_ms":[1.0],"energy_mj":%s}\n' "$id" "$$"
      else
        printf '{"id":%s,"error":"no second runner was busy at the same time"}\n' "$id"
      fi ;;
    affinity)  # says which CPUs it may run on, as an error answer
      printf '{"id":%s,"error":"cpus %s"}\n' "$id" "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$$/status)" ;;
    *) echo "fake: unknown mode $mode" >&2; exit 2 ;;
  esac
done
