#!/usr/bin/env bash
# Checks lib/'s lock annotations (GUARDED_BY, REQUIRES, ... of lib/util/mutex.h)
# and the lock order (ACQUIRED_BEFORE, checked by -Wthread-safety-beta) with
# Clang's thread safety analysis; any finding fails.
# Usage: scripts/check-locks.sh [BUILD_DIR]   (it holds include/fpstore/version.h)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/test}
clangxx=${CLANGXX:-clang++}
ls lib/*/*.cc | xargs -P2 -n4 "$clangxx" -std=c++20 -fsyntax-only \
  -Wthread-safety -Wthread-safety-beta -Werror=thread-safety -Werror=thread-safety-beta \
  -Wno-ambiguous-reversed-operator \
  -Iinclude -I"$build/include" -Ilib
