#!/usr/bin/env bash
# One-way layering of the headers: every `#include <dnncost/...>` under INCLUDE_DIR/dnncost must
# point to the same layer or a lower one, in the order of the data path:
#
#   core (0) < graph, spaces (1) < cost, io (2) < features (3) < nn (4) < optim (5) < train (6)
#   < estimators (7) < measure, search applications in search/<sub>/ (8) < device (9)
#   < dnncost.hpp (10)
#
# device/ is the kernel-level device model (kernel pass and fusion rules, kernel kinds and
# features, per-kernel regressors, calibration, building by measurement): it uses every layer
# below it, and nothing in the library but the umbrella may include it (search neither).
#
# Two narrower rules: the search core (search/*.hpp directly under search/) includes only core/
# and the search core, and the ONNX importer (io/onnx.hpp, io/onnx/) only core/, graph/ and io/.
# For every other file the search core counts as layer 8. The umbrella dnncost.hpp must not
# include the ONNX importer (it needs protobuf).
#
# Usage: layering.sh INCLUDE_DIR     check; prints every offending include, exit 1 if any
#        layering.sh --self-test     check that violations are found and reported
set -euo pipefail

# Layer of a header path relative to include/dnncost/; "?" for a directory no rule knows.
layer_of() {
    case "$1" in
        dnncost.hpp) echo 10 ;;
        core/*) echo 0 ;;
        graph/* | spaces/*) echo 1 ;;
        cost/* | io/*) echo 2 ;;
        features/*) echo 3 ;;
        nn/*) echo 4 ;;
        optim/*) echo 5 ;;
        train/*) echo 6 ;;
        estimators/*) echo 7 ;;
        measure/* | search/*) echo 8 ;;
        device/*) echo 9 ;;
        *) echo "?" ;;
    esac
}
# Name of the layer, for messages.
layer_name() {
    case "$1" in
        search/*/*) echo "search application" ;;
        search/*) echo "search core" ;;
        io/onnx.hpp | io/onnx/*) echo "io (ONNX importer)" ;;
        dnncost.hpp) echo "umbrella" ;;
        *) echo "${1%%/*}" ;;
    esac
}

check() {
    local root="$1/dnncost" bad=0 file rel line target tl fl
    if [[ ! -d "$root" ]]; then
        echo "layering: no directory $root" >&2
        return 2
    fi
    while IFS= read -r file; do
        rel="${file#"$root"/}"
        fl=$(layer_of "$rel")
        if [[ "$fl" == "?" ]]; then
            echo "$file: in no known layer (add its directory to tests/layering.sh)"
            bad=1
            continue
        fi
        while IFS=: read -r line target; do
            [[ -z "$line" ]] && continue
            tl=$(layer_of "$target")
            local why=""
            if [[ "$tl" == "?" ]]; then
                why="a header in no known layer"
            elif [[ "$rel" == search/*.hpp && "$rel" != search/*/* ]]; then
                [[ "$target" == core/* || ( "$target" == search/*.hpp && "$target" != search/*/* ) ]] ||
                    why="the search core may include only core/ and the search core"
            elif [[ "$rel" == io/onnx.hpp || "$rel" == io/onnx/* ]]; then
                [[ "$target" == core/* || "$target" == graph/* || "$target" == io/* ]] ||
                    why="the ONNX importer may include only core/, graph/ and io/"
            elif [[ "$rel" == dnncost.hpp && ( "$target" == io/onnx.hpp || "$target" == io/onnx/* ) ]]; then
                why="the umbrella header must not need protobuf"
            elif ((tl > fl)); then
                why="an upward include"
            fi
            if [[ -n "$why" ]]; then
                echo "$file:$line: $(layer_name "$rel") (layer $fl) includes <dnncost/$target>," \
                    "$(layer_name "$target") (layer $tl): $why"
                bad=1
            fi
        done < <(grep -n -o -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*<dnncost/[^>]+>' "$file" |
                 sed -E 's/^([0-9]+):.*<dnncost\/([^>]+)>/\1:\2/')
    done < <(find "$root" -type f \( -name '*.hpp' -o -name '*.h' \) | sort)
    return "$bad"
}

self_test() {
    local tmp status out
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    mkdir -p "$tmp/dnncost/core" "$tmp/dnncost/nn" "$tmp/dnncost/estimators" "$tmp/dnncost/search/mapping" \
             "$tmp/dnncost/io/onnx" "$tmp/dnncost/measure" "$tmp/dnncost/device"
    printf '#pragma once\n' >"$tmp/dnncost/core/error.hpp"
    printf '#pragma once\n#include <dnncost/core/error.hpp>\n' >"$tmp/dnncost/estimators/estimator.hpp"
    printf '#pragma once\n#include <dnncost/search/pareto.hpp>\n' >"$tmp/dnncost/search/mapping/flow.hpp"
    printf '#pragma once\n#include <dnncost/core/error.hpp>\n' >"$tmp/dnncost/search/pareto.hpp"
    printf '#pragma once\n#include <dnncost/estimators/estimator.hpp>\n' >"$tmp/dnncost/search/nsga2.hpp"
    printf '#pragma once\n#include <dnncost/core/error.hpp>\n\n  #  include <dnncost/estimators/estimator.hpp>\n' \
        >"$tmp/dnncost/nn/model.hpp"
    printf '#pragma once\n#include <dnncost/nn/model.hpp>\n' >"$tmp/dnncost/io/onnx/import.hpp"
    printf '#pragma once\n#include <dnncost/io/onnx/import.hpp>\n' >"$tmp/dnncost/dnncost.hpp"
    printf '#pragma once\n#include <dnncost/core/error.hpp>\n' >"$tmp/dnncost/measure/harness.hpp"
    printf '#pragma once\n#include <dnncost/measure/harness.hpp>\n#include <dnncost/estimators/estimator.hpp>\n' \
        >"$tmp/dnncost/device/device_model.hpp"
    printf '#pragma once\n#include <dnncost/device/device_model.hpp>\n' >"$tmp/dnncost/measure/store.hpp"
    printf '#pragma once\n#include <dnncost/device/device_model.hpp>\n' >"$tmp/dnncost/search/mapping/price.hpp"
    status=0
    out=$(check "$tmp") || status=$?
    local expect=("nn/model.hpp:4: nn (layer 4) includes <dnncost/estimators/estimator.hpp>, estimators (layer 7)"
                  "search/nsga2.hpp:2: search core"
                  "io/onnx/import.hpp:2: io (ONNX importer)"
                  "dnncost.hpp:2: umbrella"
                  "measure/store.hpp:2: measure (layer 8) includes <dnncost/device/device_model.hpp>, device (layer 9)"
                  "search/mapping/price.hpp:2: search application (layer 8) includes <dnncost/device/device_model.hpp>, device (layer 9)")
    local e ok=1
    [[ $status -eq 1 ]] || { echo "self-test: expected exit status 1, got $status"; ok=0; }
    for e in "${expect[@]}"; do
        grep -qF "$e" <<<"$out" || { echo "self-test: not reported: $e"; ok=0; }
    done
    if grep -qE 'search/mapping/flow.hpp|estimators/estimator.hpp:|device/device_model.hpp:' <<<"$out"; then
        echo "self-test: an allowed include was reported"
        ok=0
    fi
    if [[ $(grep -c . <<<"$out") -ne 6 ]]; then
        echo "self-test: expected 6 reports, got:"
        ok=0
    fi
    ((ok)) || { echo "$out"; return 1; }
    echo "self-test passed: violations found and reported, allowed includes accepted"
}

if [[ "${1:-}" == "--self-test" ]]; then
    self_test
elif [[ $# -eq 1 ]]; then
    if check "$1"; then
        echo "layering: every #include <dnncost/...> under $1 points to its own layer or a lower one"
    else
        status=$?
        [[ $status -eq 1 ]] && echo "layering: upward includes found (order: core < graph, spaces < cost, io < features < nn < optim < train < estimators < measure, search applications < device < dnncost.hpp)"
        exit "$status"
    fi
else
    echo "usage: $0 INCLUDE_DIR | --self-test" >&2
    exit 2
fi
