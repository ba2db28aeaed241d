#!/usr/bin/env bash
# Install the Debian packages dnncost needs, if any are missing (only when run as root).
set -euo pipefail
pkgs=(cmake g++ make libeigen3-dev xtensor-dev doctest-dev libbenchmark-dev libprotobuf-dev
      protobuf-compiler libonnx-dev libcli11-dev nlohmann-json3-dev)
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
