#!/usr/bin/env bash
# Runs read-only tools over and over beside one process that writes to the
# same store and compacts it in a loop, and counts the reader runs that
# fail (docs/reliability.md, "Readers beside a writer"). Run by hand; it is
# not a test: it prints its counts and exits non-zero if any run failed.
#
#   bench/stress/readers_beside_writer.sh [RUNS] [BUILD_DIR]
#
# RUNS (default 200) reader runs, cycling through stats, verify, find-all,
# clusters, dump and fpstore-query --hash; BUILD_DIR (default build/release)
# holds the tools.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-200}
build=${2:-build/release}
admin="$build/tools/fpstore-admin"
query="$build/tools/fpstore-query"
load="$build/tools/fpstore-load"
for tool in "$admin" "$query" "$load"; do
  [ -x "$tool" ] || { echo "no $tool: build it first (cmake --build $build)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/fpstore-readers.XXXXXX)
writer_pid=""
cleanup() {
  [ -n "$writer_pid" ] && kill "$writer_pid" 2>/dev/null && wait "$writer_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# A store of 200,000 random hashes, and batches of more for the writer.
/usr/bin/python3 - "$work" <<'PY'
import random, sys
work = sys.argv[1]
rnd = random.Random(7)
with open(f"{work}/base.tsv", "w") as out:
    for i in range(200_000):
        out.write(f"{i}\t0x{rnd.getrandbits(64):016x}\n")
for b in range(40):
    with open(f"{work}/more-{b}.tsv", "w") as out:
        for i in range(5_000):
            out.write(f"{1_000_000 + b * 5_000 + i}\t0x{rnd.getrandbits(64):016x}\n")
PY
"$load" --db "$work/db" --input "$work/base.tsv" --format tsv --quiet
stored=$(head -1 "$work/base.tsv" | cut -f2)

# The writer: inserts a batch, compacts, and again, until stopped.
(
  b=0
  while true; do
    "$admin" insert --db "$work/db" --input "$work/more-$((b % 40)).tsv" --format tsv \
      --batch-size 1000 --quiet >/dev/null 2>>"$work/writer.err" || echo "insert failed" >>"$work/writer.err"
    "$admin" compact --db "$work/db" --quiet >/dev/null 2>>"$work/writer.err" || echo "compact failed" >>"$work/writer.err"
    echo >>"$work/compactions"
    b=$((b + 1))
  done
) &
writer_pid=$!

failed=0
readers=(stats verify find-all clusters dump query)
for ((i = 0; i < runs; i++)); do
  what=${readers[$((i % ${#readers[@]}))]}
  case "$what" in
    query) cmd=("$query" --db "$work/db" --hash "$stored") ;;  # found: exit 0
    dump) cmd=("$admin" dump --db "$work/db" --output "$work/dump.tsv" --quiet) ;;
    find-all | clusters) cmd=("$admin" "$what" --db "$work/db" --output "$work/out.txt" --quiet) ;;
    stats) cmd=("$admin" stats --db "$work/db") ;;
    *) cmd=("$admin" "$what" --db "$work/db" --quiet) ;;
  esac
  if ! "${cmd[@]}" >/dev/null 2>"$work/reader.err"; then
    failed=$((failed + 1))
    echo "run $i ($what) failed: $(head -c 400 "$work/reader.err")"
  fi
done
kill "$writer_pid" 2>/dev/null; wait "$writer_pid" 2>/dev/null || true
writer_pid=""
compactions=$(wc -l <"$work/compactions" 2>/dev/null || echo 0)
writer_errors=$(grep -c . "$work/writer.err" 2>/dev/null || true)
echo "reader runs: $runs, failed: $failed; writer compactions meanwhile: $compactions, writer errors: ${writer_errors:-0}"
[ "$failed" -eq 0 ]
