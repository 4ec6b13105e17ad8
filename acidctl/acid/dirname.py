"""Hive ACID directory and file name grammar (../shared/spec/directory-state.md §1).

Every name Hive 3.1 and Hive 4 write inside a table or partition directory parses into a small
frozen dataclass with ``parse(name) -> obj | None`` and ``format() -> str``:

=====================  ============================================================
:class:`BaseDir`       ``base_N``, ``base_N_vM``, ``base_-9223372036854775808``
:class:`DeltaDir`      ``delta_min_max``, ``delta_min_max_stmt``, ``delta_min_max_vM``,
                       ``delta_min_max_stmt_vM``, and the same with ``delete_delta_``
:class:`BucketFile`    ``bucket_00000``, ``bucket_00000_1`` (Hive 4 direct-insert attempt)
:class:`FlushLengthFile` ``<bucket file>_flush_length`` (streaming side file)
:class:`OriginalFile`  ``000000_0``, ``000000_0_copy_1`` (pre-ACID / LOAD DATA files)
:class:`UnionSubdir`   ``HIVE_UNION_SUBDIR_n`` (Tez UNION ALL output; an "original directory")
:class:`HiddenEntry`   any name starting with ``_`` or ``.``: markers, staging and temp entries
=====================  ============================================================

Parsing is grammar-level and version-neutral: ``_vM`` is accepted everywhere. Whether a Hive 3
reader can read such a name is a separate question (:func:`hive3_parses`; check D02).

Numbers keep the width they were written with (``wid_width`` etc.; excluded from equality), so
``format(parse(x)) == x`` for every name Hive can write (leading zeros are reproduced) and check
D06 can report short padding. Freshly built objects format with Hive's minimum widths
(``%07d`` write ids and visibility txns, ``%04d`` statements, ``%05d`` buckets).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re

from acidctl.acid.writeids import LONG_MAX, LONG_MIN

BASE_PREFIX = "base_"
DELTA_PREFIX = "delta_"
DELETE_DELTA_PREFIX = "delete_delta_"
BUCKET_PREFIX = "bucket_"
VISIBILITY_PREFIX = "_v"
FLUSH_LENGTH_SUFFIX = "_flush_length"
COPY_KEYWORD = "_copy_"
UNION_SUBDIR_PREFIX = "HIVE_UNION_SUBDIR_"
ORC_ACID_VERSION_FILE = "_orc_acid_version"
METADATA_FILE = "_metadata_acid"
#: acidctl's own staging directories (hidden: a dot prefix); here, not in the compaction
#: planner, so that ``state``'s D07 check needs no compaction import
STAGING_PREFIX = ".acidctl-staging-"
#: per partition, acidctl's publication records (acidctl.compact.publish.RECORDS_DIR): bookkeeping,
#: never a leftover, not a row of ``state``
PUBLISHED_DIR = ".acidctl-published"

DELTA_DIGITS = 7
STATEMENT_DIGITS = 4
BUCKET_DIGITS = 5
LEGACY_FILE_BUCKET_DIGITS = 6
INT_MAX = 2147483647

_BASE_RE = re.compile(r"base_(-?[0-9]+)(?:_v([0-9]+))?")
_DELTA_RE = re.compile(r"(delete_delta_|delta_)([0-9]+)_([0-9]+)(?:_([0-9]+))?(?:_v([0-9]+))?")
_BUCKET_RE = re.compile(r"bucket_([0-9]+)(?:_([0-9]+))?")
_STRICT_BUCKET_RE = re.compile(r"bucket_[0-9]{5}(?:_[0-9]+)?")
_ORIGINAL_RE = re.compile(r"([0-9]+)_([0-9]+)(?:_copy_([0-9]+))?")
_UNION_RE = re.compile(r"HIVE_UNION_SUBDIR_([0-9]+)")
_PARTITION_RE = re.compile(r"[^=/]+=[^/]*")


def _fmt(value: int, width: int) -> str:
    return "%0*d" % (width, value)


def _width(text: str) -> int:
    return len(text)


def _long(text: str) -> int | None:
    v = int(text)
    return v if LONG_MIN <= v <= LONG_MAX else None


# -- directories --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BaseDir:
    """``base_N[_vM]``. ``visibility`` 0 means "no suffix" (``_v0`` means the same)."""

    write_id: int
    visibility: int = 0
    wid_width: int = dataclasses.field(default=DELTA_DIGITS, compare=False)
    vis_width: int | None = dataclasses.field(default=None, compare=False)  # None: no suffix written

    kind = "base"

    @classmethod
    def parse(cls, name: str) -> "BaseDir | None":
        m = _BASE_RE.fullmatch(name)
        if not m:
            return None
        wid = _long(m[1])
        if wid is None or (m[1].startswith("-") and wid >= 0):
            return None  # "-0": Hive accepts it, but nobody writes it; treat as unparseable
        vis = 0
        if m[2] is not None:
            v = _long(m[2])
            if v is None:
                return None
            vis = v
        return cls(
            write_id=wid, visibility=vis, wid_width=_width(m[1]), vis_width=_width(m[2]) if m[2] is not None else None
        )

    def format(self) -> str:
        s = BASE_PREFIX + _fmt(self.write_id, self.wid_width)
        return s + _vis_suffix(self.visibility, self.vis_width)

    @property
    def min_write_id(self) -> int:
        return self.write_id

    @property
    def max_write_id(self) -> int:
        return self.write_id

    @property
    def has_visibility_suffix(self) -> bool:
        return self.vis_width is not None

    @property
    def is_conversion_base(self) -> bool:
        return self.write_id == LONG_MIN

    @property
    def short_padding(self) -> bool:
        """Write id written with fewer than 7 digits (D06); the conversion base is exempt."""
        return not self.is_conversion_base and self.wid_width < DELTA_DIGITS


@dataclasses.dataclass(frozen=True)
class DeltaDir:
    """``delta_min_max[_stmt][_vM]`` or ``delete_delta_...``. ``statement_id`` −1 = none."""

    min_write_id: int
    max_write_id: int
    statement_id: int = -1
    visibility: int = 0
    delete: bool = False
    min_width: int = dataclasses.field(default=DELTA_DIGITS, compare=False)
    max_width: int = dataclasses.field(default=DELTA_DIGITS, compare=False)
    stmt_width: int = dataclasses.field(default=STATEMENT_DIGITS, compare=False)
    vis_width: int | None = dataclasses.field(default=None, compare=False)

    @property
    def kind(self) -> str:
        return "delete_delta" if self.delete else "delta"

    @property
    def prefix(self) -> str:
        return DELETE_DELTA_PREFIX if self.delete else DELTA_PREFIX

    @classmethod
    def parse(cls, name: str) -> "DeltaDir | None":
        m = _DELTA_RE.fullmatch(name)
        if not m:
            return None
        lo, hi = _long(m[2]), _long(m[3])
        if lo is None or hi is None:
            return None
        stmt = -1
        if m[4] is not None:
            stmt = int(m[4])
            if stmt > INT_MAX:
                return None
        vis = 0
        if m[5] is not None:
            v = _long(m[5])
            if v is None:
                return None
            vis = v
        return cls(
            min_write_id=lo,
            max_write_id=hi,
            statement_id=stmt,
            visibility=vis,
            delete=m[1] == DELETE_DELTA_PREFIX,
            min_width=_width(m[2]),
            max_width=_width(m[3]),
            stmt_width=_width(m[4]) if m[4] is not None else STATEMENT_DIGITS,
            vis_width=_width(m[5]) if m[5] is not None else None,
        )

    def format(self) -> str:
        s = self.prefix + _fmt(self.min_write_id, self.min_width) + "_" + _fmt(self.max_write_id, self.max_width)
        if self.statement_id >= 0:
            s += "_" + _fmt(self.statement_id, self.stmt_width)
        return s + _vis_suffix(self.visibility, self.vis_width)

    @property
    def has_statement(self) -> bool:
        return self.statement_id >= 0

    @property
    def has_visibility_suffix(self) -> bool:
        return self.vis_width is not None

    @property
    def short_padding(self) -> bool:
        return self.min_width < DELTA_DIGITS or self.max_width < DELTA_DIGITS


def _vis_suffix(visibility: int, width: int | None) -> str:
    if width is None:
        # addVisibilitySuffix appends nothing for 0
        return "" if visibility == 0 else VISIBILITY_PREFIX + _fmt(visibility, DELTA_DIGITS)
    return VISIBILITY_PREFIX + _fmt(visibility, width)


@functools.lru_cache(maxsize=1 << 16)
def parse_acid_dir(name: str) -> "BaseDir | DeltaDir | None":
    """A base or (delete) delta directory name, or None (results are immutable and cached)."""
    if name.startswith(BASE_PREFIX):
        return BaseDir.parse(name)
    if name.startswith(DELTA_PREFIX) or name.startswith(DELETE_DELTA_PREFIX):
        return DeltaDir.parse(name)
    return None


def delta_read_order(d: "DeltaDir") -> tuple[int, int, int]:
    """Hive's ``ParsedDelta.compareTo``: min write id ASC, max DESC, statement id ASC (−1 =
    none first); callers break ties by path."""
    return (d.min_write_id, -d.max_write_id, d.statement_id)


def has_acid_prefix(name: str) -> bool:
    return name.startswith((BASE_PREFIX, DELTA_PREFIX, DELETE_DELTA_PREFIX))


def hive3_parses(name: str) -> bool:
    """Whether Hive 3.1's ``parseBase`` / ``parsedDelta`` accept this directory name.

    Hive 3 has no visibility suffix: ``Long.parseLong("5_v0000010")`` and
    ``Integer.parseInt("v0000010")`` throw ``NumberFormatException``.
    """
    d = parse_acid_dir(name)
    return d is not None and not d.has_visibility_suffix


# -- files --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BucketFile:
    """``bucket_NNNNN[_attempt]`` (ACID data file)."""

    bucket: int
    attempt: int | None = None
    width: int = dataclasses.field(default=BUCKET_DIGITS, compare=False)
    attempt_text: str | None = dataclasses.field(default=None, compare=False)

    @classmethod
    def parse(cls, name: str) -> "BucketFile | None":
        m = _BUCKET_RE.fullmatch(name)
        if not m or int(m[1]) > INT_MAX:
            return None
        attempt = int(m[2]) if m[2] is not None else None
        return cls(bucket=int(m[1]), attempt=attempt, width=_width(m[1]), attempt_text=m[2])

    def format(self) -> str:
        s = BUCKET_PREFIX + _fmt(self.bucket, self.width)
        if self.attempt is not None:
            s += "_" + (self.attempt_text if self.attempt_text is not None else str(self.attempt))
        return s

    @property
    def canonical(self) -> bool:
        """Matches ``bucket_\\d{5}`` (+ optional ``_attempt``): check D11."""
        return self.width == BUCKET_DIGITS


@dataclasses.dataclass(frozen=True)
class FlushLengthFile:
    """``<data file>_flush_length``: the streaming writer's side file."""

    data_file: str

    @classmethod
    def parse(cls, name: str) -> "FlushLengthFile | None":
        if name.endswith(FLUSH_LENGTH_SUFFIX) and len(name) > len(FLUSH_LENGTH_SUFFIX):
            return cls(data_file=name[: -len(FLUSH_LENGTH_SUFFIX)])
        return None

    def format(self) -> str:
        return self.data_file + FLUSH_LENGTH_SUFFIX


@dataclasses.dataclass(frozen=True)
class OriginalFile:
    """``<bucket>_<task>[_copy_<n>]``, e.g. ``000000_0``, ``000002_0_copy_2``."""

    bucket: int
    task: int
    copy: int | None = None
    bucket_width: int = dataclasses.field(default=LEGACY_FILE_BUCKET_DIGITS, compare=False)
    task_text: str | None = dataclasses.field(default=None, compare=False)
    copy_text: str | None = dataclasses.field(default=None, compare=False)

    @classmethod
    def parse(cls, name: str) -> "OriginalFile | None":
        m = _ORIGINAL_RE.fullmatch(name)
        if not m or int(m[1]) > INT_MAX:
            return None
        return cls(
            bucket=int(m[1]),
            task=int(m[2]),
            copy=int(m[3]) if m[3] is not None else None,
            bucket_width=_width(m[1]),
            task_text=m[2],
            copy_text=m[3],
        )

    def format(self) -> str:
        s = (
            _fmt(self.bucket, self.bucket_width)
            + "_"
            + (self.task_text if self.task_text is not None else str(self.task))
        )
        if self.copy is not None:
            s += COPY_KEYWORD + (self.copy_text if self.copy_text is not None else str(self.copy))
        return s


@dataclasses.dataclass(frozen=True)
class UnionSubdir:
    """``HIVE_UNION_SUBDIR_n``."""

    n: int
    text: str | None = dataclasses.field(default=None, compare=False)

    @classmethod
    def parse(cls, name: str) -> "UnionSubdir | None":
        m = _UNION_RE.fullmatch(name)
        return cls(n=int(m[1]), text=m[1]) if m else None

    def format(self) -> str:
        return UNION_SUBDIR_PREFIX + (self.text if self.text is not None else str(self.n))


class HiddenKind(str, enum.Enum):
    ORC_ACID_VERSION = "orc_acid_version"
    METADATA_ACID = "metadata_acid"
    TMP = "tmp"  # _tmp_<uuid> (Hive 3 compactor staging), _tmp.*
    TASK_TMP = "task_tmp"  # _task_tmp.*
    HIVE_STAGING = "hive_staging"  # .hive-staging*
    ACIDCTL_STAGING = "acidctl_staging"  # .acidctl-staging-*
    ACIDCTL_REVERTING = "acidctl_reverting"  # .acidctl-reverting-* (a revert that died)
    SUCCESS = "success"  # _SUCCESS
    OTHER = "other"

    @property
    def leftover(self) -> bool:
        """Temporary output of a job (check D07)."""
        return self in (
            HiddenKind.TMP,
            HiddenKind.TASK_TMP,
            HiddenKind.HIVE_STAGING,
            HiddenKind.ACIDCTL_STAGING,
            HiddenKind.ACIDCTL_REVERTING,
        )


@dataclasses.dataclass(frozen=True)
class HiddenEntry:
    """Any name starting with ``_`` or ``.`` (Hive's ``hiddenFileFilter`` rejects them)."""

    name: str
    kind: HiddenKind

    @classmethod
    def parse(cls, name: str) -> "HiddenEntry | None":
        if not is_hidden(name):
            return None
        if name == ORC_ACID_VERSION_FILE:
            kind = HiddenKind.ORC_ACID_VERSION
        elif name == METADATA_FILE:
            kind = HiddenKind.METADATA_ACID
        elif name.startswith("_task_tmp"):
            kind = HiddenKind.TASK_TMP
        elif name.startswith("_tmp"):
            kind = HiddenKind.TMP
        elif name.startswith(".hive-staging"):
            kind = HiddenKind.HIVE_STAGING
        elif name.startswith(".acidctl-staging-"):
            kind = HiddenKind.ACIDCTL_STAGING
        elif name.startswith(".acidctl-reverting-"):
            kind = HiddenKind.ACIDCTL_REVERTING
        elif name == "_SUCCESS":
            kind = HiddenKind.SUCCESS
        else:
            kind = HiddenKind.OTHER
        return cls(name=name, kind=kind)

    def format(self) -> str:
        return self.name


#: extensions of data no ORC reader opens: a file named so in an original position (read as ORC
#: while the partition has no base) fails every Hive/Spark/Trino query of the partition (D12).
#: By name only: ``state`` never opens files without --deep (there, F00 says the same).
FOREIGN_EXTENSIONS = frozenset(
    {"parquet", "avro", "txt", "csv", "tsv", "json", "jsonl", "xml", "log", "gz", "bz2", "xz", "zst", "lz4", "deflate"}
)


def foreign_extension(name: str) -> str | None:
    """The extension of a file name that says it is no ORC file (``extra.csv`` → ``csv``), or None."""
    leaf = name.rsplit("/", 1)[-1]
    ext = leaf.rsplit(".", 1)[-1].lower() if "." in leaf else ""
    return ext if ext in FOREIGN_EXTENSIONS else None


def is_hidden(name: str) -> bool:
    """Hive's ``hiddenFileFilter``: names starting with ``_`` or ``.``."""
    return name.startswith(("_", "."))


def is_hidden_path(rel: str) -> bool:
    """A relative path any of whose components is hidden (readers never reach it)."""
    return any(is_hidden(part) for part in rel.split("/") if part)


def is_partition_dir(name: str) -> bool:
    """``key=value`` (a partition level of a partitioned table)."""
    return not is_hidden(name) and _PARTITION_RE.fullmatch(name) is not None


def partition_keys_lower(spec: str) -> str:
    """A partition path ``k=v[/k2=v2]`` as Hive names its directories: keys lower-case (Hive
    column names are case-insensitive and ``FileUtils.makePartName`` lower-cases them), values
    as given (partition values are case-sensitive). ``DS=2026-01-01`` → ``ds=2026-01-01``."""
    parts = []
    for p in spec.strip("/").split("/"):
        k, sep, v = p.partition("=")
        parts.append(k.lower() + sep + v)
    return "/".join(parts)


def is_strict_bucket_name(name: str) -> bool:
    return _STRICT_BUCKET_RE.fullmatch(name) is not None


def is_bucket_data_file(name: str) -> bool:
    """Hive's ``bucketFileFilter``: starts with ``bucket_`` and is not a side file."""
    return name.startswith(BUCKET_PREFIX) and not name.endswith(FLUSH_LENGTH_SUFFIX)


def parse_name(name: str, *, is_dir: bool):
    """Classify any child name: one of the dataclasses above, or None (unrecognised).

    Directories: hidden, base, (delete) delta, union subdir. Files: hidden, side file, bucket
    file, original file. A base/delta-prefixed directory that does not parse returns None
    (check D01).
    """
    h = HiddenEntry.parse(name)
    if h is not None:
        return h
    if is_dir:
        if has_acid_prefix(name):
            return parse_acid_dir(name)
        return UnionSubdir.parse(name)
    f = FlushLengthFile.parse(name)
    if f is not None:
        return f
    return BucketFile.parse(name) or OriginalFile.parse(name)
