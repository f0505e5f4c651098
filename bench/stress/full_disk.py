#!/usr/bin/python3
"""Fills a real file system under one store handle, frees space, and checks
that the same handle writes again with every acknowledged insert kept
(docs/reliability.md, "A full disk"). Run by hand as root (it mounts a
20 MB tmpfs, grows it, and unmounts it); it is not a test: it prints what
happened and exits non-zero if the handle lost a document or never wrote
again.

    sudo /usr/bin/python3 bench/stress/full_disk.py [PYTHON_PACKAGE_DIR]

PYTHON_PACKAGE_DIR (default build/release/python) holds the fpstore package
built beside the library.
"""

import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else
                os.path.join(here, "..", "..", "build", "release", "python"))
import fpstore  # noqa: E402

BATCH = 1000


def docs(first):
    return [(i, (i * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF, "m" * 50)
            for i in range(first, first + BATCH)]


def main():
    mount = tempfile.mkdtemp(prefix="fpstore-full-disk.")
    subprocess.check_call(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", mount])
    try:
        store = fpstore.open(os.path.join(mount, "db"))
        acknowledged = 0
        while True:
            try:
                store.insert_many(docs(acknowledged))
                acknowledged += BATCH
            except fpstore.Error as e:
                print(f"full after {acknowledged:,} acknowledged documents: {e}")
                break
        for _ in range(3):
            try:
                store.insert(10**12, 42)
                print("an insert on the full disk succeeded")
                return 1
            except fpstore.Error as e:
                print(f"refused while full: {type(e).__name__}")
            time.sleep(0.3)
        print(f"reads while full: get(0) {'found' if store.get(0) else 'MISSING'}")

        subprocess.check_call(["mount", "-o", "remount,size=400m", mount])
        start = time.monotonic()
        while True:
            try:
                store.insert_many(docs(acknowledged))
                acknowledged += BATCH
                break
            except fpstore.Error as e:
                if time.monotonic() - start > 120:
                    print(f"the handle never wrote again: {e}")
                    return 1
                time.sleep(0.2)
        print(f"space freed: the same handle wrote again after {time.monotonic() - start:.1f} s")
        store.flush()
        missing = [i for i in range(acknowledged) if store.get(i) is None]
        documents = store.stats().documents
        store.verify()
        store.close()
        print(f"documents {documents:,} of {acknowledged:,} acknowledged, "
              f"{len(missing)} missing; verify ok")
        return 0 if not missing and documents == acknowledged else 1
    finally:
        subprocess.call(["umount", mount])
        os.rmdir(mount)


if __name__ == "__main__":
    sys.exit(main())
