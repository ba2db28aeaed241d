#!/usr/bin/env bash
# Leave-one-device-out few-shot adaptation (dnncost adapt) over the devices of a latency table:
# each device in turn is the new one, the others are the pool; SEEDS seeds of SHOTS shots each,
# with the ridge-on-the-shots floor on the same shots. One JSON report per run in OUT, then a
# Markdown table of the means (bench/adaptation_table.py).
#
# Usage: bench/adaptation.sh TABLE.csv OUT_DIR [extra dnncost adapt options...]
#   env: DNNCOST (binary, default build/dnncost), SEEDS (default 10), SHOTS (default 10),
#        DEVICES (comma list, default every column but the key), BASELINE (ridge|none, default ridge)
set -euo pipefail
table="$1"; out="$2"; shift 2
bin="${DNNCOST:-build/dnncost}"
seeds="${SEEDS:-10}"; shots="${SHOTS:-10}"; baseline="${BASELINE:-ridge}"
devices="${DEVICES:-$(head -1 "$table" | tr -d '\r' | cut -d, -f2-)}"
mkdir -p "$out"
IFS=, read -r -a devs <<< "$devices"
for target in "${devs[@]}"; do
    pool=""
    for d in "${devs[@]}"; do [[ "$d" != "$target" ]] && pool="${pool:+$pool,}$d"; done
    for ((seed = 0; seed < seeds; ++seed)); do
        "$bin" adapt --pool "$table" --pool-targets "$pool" --target "$target" --shots "$shots" --seed "$seed" \
            --baseline "$baseline" --report "$out/$target.$seed.json" "$@" > /dev/null 2>> "$out/log.txt"
    done
    echo "adaptation: $target done" >&2
done
python3 "$(dirname "$0")/adaptation_table.py" "$out"
