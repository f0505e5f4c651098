"""Run by tests/consumer/run.cmake (STEP=python) with PYTHONPATH pointing into
an install prefix: the installed package imports, loads the installed library
and works."""

import os
import sys
import tempfile

prefix = os.path.realpath(sys.argv[1])

import fpstore  # noqa: E402

assert os.path.realpath(fpstore.__file__).startswith(prefix), fpstore.__file__
with open("/proc/self/maps") as maps:
    libraries = {line.split()[-1] for line in maps if "libfpstore.so" in line}
assert libraries, "libfpstore.so is not loaded"
for library in libraries:
    assert os.path.realpath(library).startswith(prefix), f"loaded {library}, not from {prefix}"
with tempfile.TemporaryDirectory() as scratch:
    with fpstore.open(os.path.join(scratch, "db")) as store:
        store.insert(1, "the installed package works", b"meta")
        assert [m.id for m in store.query("the installed package works")] == [1]
print("ok", fpstore.__version__)
