"""The typed exception hierarchy and the exit codes it maps to.

Every error a user can cause is an :class:`AcidctlError` subclass. The CLI turns it into one
line on stderr (a JSON object in ``--output json`` mode) and the exit code of its class; no
traceback unless ``--verbose``. Anything else is a bug and exits with ``INTERNAL`` (1).

This module is the single place where exit codes are defined; README.md and the man page list
the same table (a test checks that they agree).
"""

from __future__ import annotations

import enum
import re


class ExitCode(enum.IntEnum):
    OK = 0
    INTERNAL = 1  # unexpected error (a bug): please report it
    USAGE = 2  # bad command line (typer/click's own code)
    NOT_FOUND = 3  # file, directory, table, partition, compaction id ... does not exist
    VALIDATION = 4  # the command ran and found problems of severity "error"
    UNAVAILABLE = 5  # storage or metastore unreachable / refused the connection
    CONFLICT = 6  # lock held by someone else, or a request refused for safety
    INVALID_INPUT = 7  # input exists but is unusable: not ORC, truncated, not ACID, not a table
    AUTH = 8  # authentication failed: no or expired Kerberos ticket, a rejected delegation token
    MISSING_EXTRA = 9  # an optional part is not installed (pip install 'acidctl[EXTRA]')
    NEEDS_DATABASE = 10  # the step needs the metastore's database; a Thrift metastore cannot do it
    INTERRUPTED = 130  # Ctrl-C


EXIT_CODE_DOC = {
    ExitCode.OK: "success",
    ExitCode.INTERNAL: "unexpected internal error (a bug; rerun with -v for the traceback)",
    ExitCode.USAGE: "usage error: unknown option, bad argument",
    ExitCode.NOT_FOUND: "file, directory, table, partition or id not found",
    ExitCode.VALIDATION: "validation found problems of severity error",
    ExitCode.UNAVAILABLE: "storage or metastore unavailable",
    ExitCode.CONFLICT: "lock conflict, or the request was refused for safety",
    ExitCode.INVALID_INPUT: "invalid input: not ORC, truncated, not an ACID file or table",
    ExitCode.AUTH: "authentication failed: no or expired Kerberos ticket (kinit), rejected token",
    ExitCode.MISSING_EXTRA: "an optional extra is not installed (pip install 'acidctl[EXTRA]')",
    ExitCode.NEEDS_DATABASE: "the step needs the metastore's database (not possible over a thrift:// metastore)",
    ExitCode.INTERRUPTED: "interrupted (SIGINT)",
}


_URL_PASSWORD = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^:/@\s]*):(?P<pw>[^@/\s]*)@")
# a key right after a path separator is a file name (``/etc/passwd: Not an ORC file``), not a
# setting: those are left alone (every other spelling, ``db_password=``, ``PGPASSWORD=``, is masked)
_KV_PASSWORD = re.compile(
    r"(?i)(?<![/\\])(?P<key>password|passwd|pwd|secret|token|credential|access_key|secret_key|api_key)"
    # the value never ends with ":" — that is the message's own separator (``...?token=abc: Connection
    # refused`` keeps its ``: ``)
    r"(?P<sep>\s*(?:=|:|%3D)\s*)(?P<val>[^\s&;,'\"]*[^\s&;,'\":])"
)


def redact(text: str) -> str:
    """Mask credentials in URLs (``scheme://user:secret@``) and ``password=...`` pairs."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    return _KV_PASSWORD.sub(lambda m: f"{m['key']}{m['sep']}***", text)


class AcidctlError(Exception):
    """Base of every expected error. ``str(e)`` is the one-line message shown to users."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, *, hint: str | None = None):
        # one line, but otherwise verbatim (Hive's own messages have meaningful double spaces)
        super().__init__(redact(re.sub(r"\s*[\r\n]+\s*", " ", str(message)).strip()))
        self.hint = redact(hint) if hint else None

    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_dict(self) -> dict:
        d = {"type": self.kind, "message": str(self), "exit_code": int(self.exit_code)}
        if self.hint:
            d["hint"] = self.hint
        return d


class UsageError(AcidctlError):
    exit_code = ExitCode.USAGE


class NotFoundError(AcidctlError):
    exit_code = ExitCode.NOT_FOUND


class PathNotFound(NotFoundError):
    pass


class TableNotFound(NotFoundError):
    pass


class ValidationFailed(AcidctlError):
    """Raised after rendering results that contain error-level findings."""

    exit_code = ExitCode.VALIDATION


class UnavailableError(AcidctlError):
    exit_code = ExitCode.UNAVAILABLE


class StorageUnavailable(UnavailableError):
    pass


class MetastoreUnavailable(UnavailableError):
    pass


class AuthenticationFailed(AcidctlError):
    """A server refused who we are: no Kerberos ticket, an expired one, a delegation token it
    does not accept, a GSSAPI login the database refused. The message names the host; the hint
    says what to do (``kinit``, a keytab)."""

    exit_code = ExitCode.AUTH


class MissingExtra(AcidctlError):
    """An optional dependency (an extra of the package) is needed but not installed."""

    exit_code = ExitCode.MISSING_EXTRA


class NeedsDatabase(AcidctlError):
    """A step only the metastore's database offers, asked of a Thrift metastore."""

    exit_code = ExitCode.NEEDS_DATABASE


class ConflictError(AcidctlError):
    exit_code = ExitCode.CONFLICT


class LockConflict(ConflictError):
    """``stale``: the lock was left by a process of this host that is gone (a run that died)."""

    stale: bool = False


class RefusedError(ConflictError):
    pass


class InvalidInputError(AcidctlError):
    exit_code = ExitCode.INVALID_INPUT


class CorruptOrcFile(InvalidInputError):
    pass


class NotAcidFile(InvalidInputError):
    pass


class NotATable(InvalidInputError):
    pass


class InvalidAcidLayout(InvalidInputError):
    pass


class SnapshotUnavailable(InvalidInputError):
    """Hive's "Not enough history available" and other unreadable snapshots."""


class UnsupportedSchema(InvalidInputError):
    """A metastore database without Hive's tables, or of an unsupported version."""


class MetastoreError(AcidctlError):
    """A metastore query failed for a reason other than connectivity."""

    exit_code = ExitCode.INVALID_INPUT


class WriteVerificationFailed(AcidctlError):
    """A file acidctl wrote did not read back as written (a bug; nothing was published)."""

    exit_code = ExitCode.INTERNAL
