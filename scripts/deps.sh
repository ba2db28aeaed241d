#!/usr/bin/env bash
# Install the Debian packages dnncost needs, if any are missing (only when run as root), and the
# npm dependencies of the bundled ONNX Runtime runner (runners/onnxruntime) when they are missing.
#   deps.sh [--torch]   --torch: also PyTorch (python3-torch, large), for examples/python/
set -euo pipefail
pkgs=(cmake g++ make ninja-build libeigen3-dev xtensor-dev doctest-dev libbenchmark-dev libprotobuf-dev
      protobuf-compiler libonnx-dev libcli11-dev nlohmann-json3-dev libxgboost-dev
      python3-dev pybind11-dev python3-pybind11 python3-pytest python3-numpy)
[ "${1:-}" = --torch ] && pkgs+=(python3-torch)
# Node.js runs the bundled ONNX Runtime runner; an existing node (e.g. from NodeSource) will do.
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "dnncost: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "dnncost: missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi

# The runner's pinned npm packages (package-lock.json). --ignore-scripts: onnxruntime-node ships
# its CPU library in the package; its install script only fetches optional GPU add-ons.
runner_dir="$(cd "$(dirname "$0")/.." && pwd)/runners/onnxruntime"
if [ ! -d "$runner_dir/node_modules/onnxruntime-node" ]; then
  echo "dnncost: installing the ONNX Runtime runner's npm packages (npm ci in $runner_dir)" >&2
  (cd "$runner_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi
