"""The exceptions fpstore raises: one per kind of failure, each carrying the
store's message (which names the file, line or option and the reason)."""


class Error(Exception):
    """Every error fpstore raises."""


class NotFoundError(Error, KeyError):
    """No store at the path (and create=False), or a missing id where one is required."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class CorruptionError(Error):
    """Stored data is damaged or inconsistent (verify, a damaged log, ...)."""


class InvalidArgumentError(Error, ValueError):
    """An argument or option out of its range, or not an fpstore store."""


class IOError(Error, OSError):  # noqa: A001 - the name says what the store reports
    """The file system failed: a full disk, a missing permission."""


class BusyError(Error):
    """The store is open for writing by another process or Store object."""


class NotSupportedError(Error):
    """A write to a read-only store, or an on-disk format this build does not read."""


__all__ = [
    "Error",
    "NotFoundError",
    "CorruptionError",
    "InvalidArgumentError",
    "IOError",
    "BusyError",
    "NotSupportedError",
]
