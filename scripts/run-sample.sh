#!/usr/bin/env bash
# Installs what is missing, builds a release, and runs the main job on the
# sample corpus shipped in data/.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DFPSTORE_BUILD_TESTS=OFF -DFPSTORE_BUILD_BENCH=OFF >/dev/null
cmake --build build/release -j2

# The store and its loader are not built yet: for now the main job stops
# after fingerprinting the corpus.
build/release/tools/fpstore-query --fingerprint --input data/sample.jsonl
