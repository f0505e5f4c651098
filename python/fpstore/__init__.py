"""fpstore: a persistent store of simhash fingerprints that finds near-duplicate
documents exactly, with a similarity that confirms each match.

    import fpstore

    with fpstore.open("crawl.fps") as store:
        result = store.check_and_insert(42, page_text, b"https://example.org/a",
                                        if_no_match=True)
        if not result.inserted:
            print("near-duplicate of", [m.id for m in result.matches])

A document or a query is given as a text (str: fingerprinted and signed with
the store's options), a bare 64-bit fingerprint (int: matched by distance
alone), or a Sketch. Errors raise the exceptions of fpstore.errors. Calls that
read or write the store release the GIL, so threads can share one store.
See docs/python.md.
"""

from typing import Optional

from . import errors
from ._fpstore import (
    BulkLoader,
    BulkLoadStats,
    CheckResult,
    InsertStats,
    Document,
    FingerprintOptions,
    Fingerprinter,
    Match,
    NearPair,
    Plan,
    Sketch,
    Stats,
    Store,
    __version__,
    destroy_store,
    estimate_similarity,
    hamming_distance,
)
# open and IOError are not in __all__: a star import must not hide the built-ins.
from .errors import (
    BusyError,
    CorruptionError,
    Error,
    InvalidArgumentError,
    IOError,
    NotFoundError,
    NotSupportedError,
)

open = Store.open  # noqa: A001 - fpstore.open(path, ...) opens or creates a store

_default_fingerprinter: Optional[Fingerprinter] = None


def _fingerprinter(options: dict) -> Fingerprinter:
    global _default_fingerprinter
    if options:
        return Fingerprinter(**options)
    if _default_fingerprinter is None:
        _default_fingerprinter = Fingerprinter()
    return _default_fingerprinter


def fingerprint(text: str, **options) -> int:
    """The simhash fingerprint of a UTF-8 text; options as Fingerprinter's
    (window, weighting, signature_bytes, signature_window, bits)."""
    return _fingerprinter(options).fingerprint(text)


def sketch(text: str, **options) -> Sketch:
    """The fingerprint and the verification signature of a text, in one pass."""
    return _fingerprinter(options).sketch(text)


__all__ = [
    "BulkLoader",
    "BulkLoadStats",
    "BusyError",
    "CheckResult",
    "InsertStats",
    "CorruptionError",
    "Document",
    "Error",
    "FingerprintOptions",
    "Fingerprinter",
    "InvalidArgumentError",
    "Match",
    "NearPair",
    "NotFoundError",
    "NotSupportedError",
    "Plan",
    "Sketch",
    "Stats",
    "Store",
    "destroy_store",
    "errors",
    "estimate_similarity",
    "fingerprint",
    "hamming_distance",
    "sketch",
]
