#!/usr/bin/env bash
# Installs the Debian 12 packages fpstore needs, only those that are missing.
set -euo pipefail

packages=(
  g++ clang cmake ninja-build pkg-config
  librocksdb-dev libroaring-dev libboost-program-options-dev
  libicu-dev libxxhash-dev libsimdjson-dev
  libgtest-dev libbenchmark-dev
  python3 python3-dev pybind11-dev python3-pytest python3-scrapy
  redis-server redis-tools libhiredis-dev libssl-dev openssl
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
