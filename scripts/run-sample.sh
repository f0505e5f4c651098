#!/usr/bin/env bash
# Installs what is missing, builds a release, and runs the main job on the
# sample corpus shipped in data/: load it into a fresh store, show the
# store, list its near-duplicate clusters with their urls, and check one
# page against the store. Then installs fpstore for this user (under
# ~/.local, the Python package in the user's site-packages, so that
# Debian's python3 imports it) and asks the same store from Python.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
prefix="$HOME/.local"
site=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())')
case "$site" in
  "$prefix"/*) python_dir="${site#"$prefix"/}" ;;
  *) python_dir=lib/python3/dist-packages ;;
esac
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DFPSTORE_BUILD_TESTS=OFF -DFPSTORE_BUILD_BENCH=OFF \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DFPSTORE_PYTHON_INSTALL_DIR="$python_dir" >/dev/null
cmake --build build/release -j2

bin=build/release/tools
store=build/sample.fps
rm -rf "$store"

echo "== Loading data/sample.jsonl into $store"
"$bin/fpstore-load" --db "$store" --input data/sample.jsonl --meta-column url

echo
echo "== The store"
"$bin/fpstore-admin" stats --db "$store"

echo
echo "== Near-duplicate clusters (within 3 bits, similarity >= 0.9), with their urls"
# The dump (id, fingerprint, time, signature, metadata) is read for the urls.
"$bin/fpstore-admin" dump --db "$store" --quiet > build/sample.dump
"$bin/fpstore-admin" clusters --db "$store" --distance 3 --quiet |
  awk -F'\t' 'NR == FNR { url[$1] = $5; next }
              $1 != last { printf "\ncluster %s\n", $1; last = $1 }
              { printf "  %6s  %s\n", $2, url[$2] }' build/sample.dump -
echo

echo "== Is the first page of the corpus already known? (fpstore-query --text)"
text=$(head -n 1 data/sample.jsonl | sed -e 's/.*"text": "//' -e 's/"}$//' -e 's/\\n/ /g')
"$bin/fpstore-query" --db "$store" --text "$text"

echo
echo "== Installing for this user under $prefix"
cmake --install build/release >/dev/null
echo "installed: $prefix/bin/fpstore-*, $prefix/lib/libfpstore.so, $prefix/$python_dir/fpstore"

echo
echo "== The same question from Python (python3 -c 'import fpstore')"
/usr/bin/python3 - "$store" "$text" <<'PY'
import sys

import fpstore

with fpstore.open(sys.argv[1], read_only=True) as store:
    print(f"{store.stats().documents} documents in {store.path}")
    for match in store.query(sys.argv[2]):
        print(f"  id {match.id}  distance {match.distance}  similarity {match.similarity:.3f}"
              f"  {match.metadata.decode()}")
PY
