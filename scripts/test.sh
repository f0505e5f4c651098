#!/usr/bin/env bash
# Installs what is missing, builds with AddressSanitizer, UBSan and -Werror,
# and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DFPSTORE_SANITIZE=ON -DFPSTORE_WERROR=ON >/dev/null
cmake --build build/test -j2
ctest --test-dir build/test --output-on-failure -j2 --timeout 600
