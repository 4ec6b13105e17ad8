"""``dump --meta`` and the per-file ACID checks (F01–F15 of directory-state.md §9.4).

``inspect_file`` reads an ORC file's footer and, for ACID files, its five key columns stripe
by stripe (never the row data, except the validity of ``row``) and checks what Hive's readers
rely on: the ACID schema, ``hive.acid.key.index`` (one entry per stripe, equal to that stripe's
last key), ``hive.acid.stats`` (exact event counts), ``hive.acid.version``, sort order, operation
codes and bucket properties against the file name. ``state --deep`` calls the same function.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from acidctl.findings import Finding, Severity
from acidctl.fs import TableFS
from acidctl.orc import bucketcodec
from acidctl.orc.acidfile import (
    ACID_STATS,
    ACID_VERSION,
    KEY_INDEX,
    KeyOrder,
    event_stats,
    parse_acid_stats,
    parse_key_index,
)
from acidctl.orc.reader import OrcFile, StripeInfo
from acidctl.units import noun


@dataclasses.dataclass
class FileReport:
    path: str
    length: int
    file_length: int
    flush_length: int | None
    format_version: str
    writer: str
    writer_version: int
    software_version: str
    compression: str
    compression_block_size: int
    row_index_stride: int
    rows: int
    schema: str
    is_acid: bool
    stripes: list[StripeInfo]
    user_metadata: dict[str, str]
    key_index: list[tuple[int, int, int]] | None
    acid_stats: dict[str, int] | None
    event_counts: dict[str, int] | None
    column_statistics: list[dict] | None
    findings: list[Finding]

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["stripes"] = [s.to_dict() for s in self.stripes]
        d["findings"] = [f.to_dict() for f in self.findings]
        d["key_index"] = None if self.key_index is None else [list(k) for k in self.key_index]
        return d


def _decode(meta: dict[str, bytes]) -> dict[str, str]:
    return {k: v.decode("utf-8", "replace") for k, v in meta.items()}


def inspect_file(
    tfs: TableFS,
    path: str,
    *,
    statistics: bool = True,
    dir_kind: str | None = None,
    dir_range: tuple[int, int] | None = None,
    expect_acid: bool | None = None,
    table_columns: list[str] | None = None,
    hive_version: int = 3,
) -> FileReport:
    """Footer facts plus findings for one ORC file.

    ``dir_kind`` is ``base``, ``delta``, ``delete_delta`` or ``None`` (unknown/original) and
    ``dir_range`` the directory's (min, max) write ids; both sharpen the checks when known.
    """
    return _inspect(
        tfs,
        path,
        statistics=statistics,
        dir_kind=dir_kind,
        dir_range=dir_range,
        expect_acid=expect_acid,
        table_columns=table_columns,
        hive_version=hive_version,
        defer_events=False,
    )[0]


def inspect_file_deferred(
    tfs: TableFS,
    path: str,
    *,
    dir_kind: str | None = None,
    dir_range: tuple[int, int] | None = None,
    expect_acid: bool | None = None,
    hive_version: int = 3,
) -> tuple[FileReport, "EventChecks | None"]:
    """:func:`inspect_file` (without statistics) less the read of the events: the footer's
    findings now, and the :class:`EventChecks` (None for a file without the ACID schema, which
    has none) for the caller to feed with every batch of the file it reads anyway; their
    findings reach the report at ``finish()``."""
    return _inspect(
        tfs,
        path,
        statistics=False,
        dir_kind=dir_kind,
        dir_range=dir_range,
        expect_acid=expect_acid,
        table_columns=None,
        hive_version=hive_version,
        defer_events=True,
    )


def _inspect(
    tfs: TableFS,
    path: str,
    *,
    statistics: bool,
    dir_kind: str | None,
    dir_range: tuple[int, int] | None,
    expect_acid: bool | None,
    table_columns: list[str] | None,
    hive_version: int,
    defer_events: bool,
) -> tuple[FileReport, "EventChecks | None"]:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    findings: list[Finding] = []

    def add(check: str, sev: Severity, msg: str):
        findings.append(Finding(check, sev, tfs.display(path), msg))

    with OrcFile(tfs, path) as orc:
        meta = _decode(orc.user_metadata)
        stripes = orc.stripes()
        report = FileReport(
            path=orc.display_path,
            length=orc.length,
            file_length=orc.file_length,
            flush_length=orc.flush.length if orc.flush else None,
            format_version=orc.format_version,
            writer=orc.writer,
            writer_version=orc.writer_version,
            software_version=orc.software_version,
            compression=orc.compression,
            compression_block_size=orc.compression_block_size,
            row_index_stride=orc.row_index_stride,
            rows=orc.rows,
            schema=str(orc.schema),
            is_acid=orc.is_acid,
            stripes=stripes,
            user_metadata=meta,
            key_index=None,
            acid_stats=None,
            event_counts=None,
            column_statistics=orc.column_statistics() if statistics else None,
            findings=findings,
        )

        if orc.compression == "ZSTD":
            add(
                "F07",
                Severity.ERROR if hive_version == 3 else Severity.WARN,
                "ZSTD compression: Hive 3.1 (ORC 1.5) cannot read it",
            )
        if orc.flush is not None:
            add(
                "M06",
                Severity.WARN,
                f"side file {orc.flush.side_file} present: a streaming writer is "
                f"active or died; reading the first {orc.length} of {orc.file_length} bytes",
            )

        if not orc.is_acid:
            if KEY_INDEX in meta:
                add("F01", Severity.ERROR, "hive.acid.key.index is set but the schema is not the 6-field ACID schema")
            elif expect_acid:
                add("F01", Severity.ERROR, f"not an ACID file: schema {orc.schema}")
            return report, None

        _check_acid_metadata(orc, meta, stripes, add, report, dir_kind=dir_kind)
        _check_row_schema(orc, add, table_columns)
        ev = EventChecks(orc.schema, stripes, report, add, name=name, dir_kind=dir_kind, dir_range=dir_range)
        if defer_events:
            return report, ev
        for batch in orc.iter_batches(columns=ev.columns):
            ev.feed(batch)
        ev.finish()
    return report, None


def _check_acid_metadata(orc: OrcFile, meta, stripes, add, report: FileReport, *, dir_kind: str | None = None):
    if KEY_INDEX not in meta:
        add("F03", Severity.ERROR, "hive.acid.key.index missing: Hive treats the file as an original (non-ACID) file")
    else:
        try:
            report.key_index = parse_key_index(meta[KEY_INDEX])
        except ValueError:
            add("F04", Severity.ERROR, f"hive.acid.key.index is malformed: {meta[KEY_INDEX]!r}")
        else:
            if meta[KEY_INDEX] and not meta[KEY_INDEX].endswith(";"):
                add("F04", Severity.ERROR, "hive.acid.key.index: the last entry is not terminated by ';'")
            if len(report.key_index) != len(stripes):
                add(
                    "F04",
                    Severity.ERROR,
                    f"hive.acid.key.index has {len(report.key_index)} entries for "
                    f"{len(stripes)} stripes (run fixacidkeyindex)",
                )
    if ACID_STATS not in meta:
        # an error in delete files (Hive 3 fails reading delete deltas without it), else a warning
        add(
            "F05",
            Severity.ERROR if dir_kind == "delete_delta" else Severity.WARN,
            "hive.acid.stats missing: Hive 3 fails reading delete deltas without it",
        )
    else:
        try:
            report.acid_stats = parse_acid_stats(meta[ACID_STATS])
        except ValueError:
            add("F05", Severity.ERROR, f"hive.acid.stats is malformed: {meta[ACID_STATS]!r}")
    version = meta.get(ACID_VERSION)
    if version is None:
        add("F06", Severity.WARN, "hive.acid.version missing (Trino may reject the file without _orc_acid_version)")
    else:
        try:
            if int(version) < 2:
                add("F06", Severity.WARN, f"hive.acid.version is {version}, expected 2")
        except ValueError:
            add("F06", Severity.WARN, f"hive.acid.version is not an integer: {version!r}")


def _check_row_schema(orc: OrcFile, add, table_columns):
    row = list(orc.schema.fields.values())[5]
    names = list(row.fields)
    if names and all(re.fullmatch(r"_col\d+", n) for n in names):
        add("F02", Severity.ERROR, "row fields are named _colN: ORC maps columns by name and Trino rejects such files")
    elif any(n != n.lower() for n in names):
        add(
            "F02",
            Severity.ERROR,
            "row field names are not lower-case Hive column names: " + ", ".join(n for n in names if n != n.lower()),
        )
    if table_columns is not None and [n.lower() for n in names] != [c.lower() for c in table_columns]:
        add("F02", Severity.ERROR, f"row fields {names} differ from the table columns {table_columns}")


def _event_columns(schema) -> list[str]:
    """The columns the event checks read: the five key columns and one primitive field of
    ``row`` (whose validity is the row's), or the key columns alone."""
    top = list(schema.fields)
    row_td = schema.fields[top[5]]
    key_cols = top[:5]
    # one primitive field of `row` tells its validity (F13); never a timestamp, which Arrow
    # may not hold (outside 1677..2262)
    simple = (
        "BOOLEAN",
        "BYTE",
        "SHORT",
        "INT",
        "LONG",
        "FLOAT",
        "DOUBLE",
        "STRING",
        "VARCHAR",
        "CHAR",
        "BINARY",
        "DECIMAL",
        "DATE",
    )
    leaf = next((n for n, t in row_td.fields.items() if t.kind.name in simple), None)
    cols = key_cols + ([f"{top[5]}.{leaf}"] if leaf else [])
    return cols


class EventChecks:
    """The event checks of :func:`inspect_file` (F04 key index, F05 stats, F08-F13, F15) fed
    batch by batch by whoever reads the file: :func:`inspect_file` itself, or a caller that
    reads every row anyway (the compaction's verification, through
    :func:`acidctl.orc.writer.start_verify`). Batches hold :attr:`columns` — or all six ACID
    columns, of which the first ``len(columns)`` are used — in file order; :meth:`finish` adds
    the findings to the report."""

    def __init__(self, schema, stripes, report: FileReport, add, *, name, dir_kind, dir_range):
        self.columns = _event_columns(schema)
        self.rows = 0
        self._tally = _EventTally.start(stripes, name=name, dir_kind=dir_kind, dir_range=dir_range)
        self._report = report
        self._add = add

    def feed(self, batch) -> None:
        if batch.num_columns > len(self.columns):
            batch = batch.select(list(range(len(self.columns))))
        self.rows += batch.num_rows
        self._tally.feed(batch)

    def finish(self) -> None:
        self._report.event_counts = self._tally.counts
        self._tally.key_index_findings(self._report, self._add)
        self._tally.stats_findings(self._report, self._add)
        self._tally.event_findings(self._add)


@dataclasses.dataclass
class _EventTally:
    """What the event checks count over a file's batches, one stage per concern: operations and
    stats, key order, the key at each stripe's end (for the key index), bucket properties, row
    nullness and the transaction range of the directory."""

    name: str
    dir_kind: str | None
    dir_range: tuple[int, int] | None
    file_bucket: int | None  # only bucket_N names promise a bucket id (§4.2)
    end_rows: Any  # sorted global row index of each stripe's last row
    ends: dict[int, int]  # ... -> stripe index
    last_keys: list
    counts: dict[str, int] = dataclasses.field(default_factory=lambda: {"inserts": 0, "updates": 0, "deletes": 0})
    order: KeyOrder = dataclasses.field(default_factory=KeyOrder)
    unsorted_at: tuple[int, tuple[int, int, int], tuple[int, int, int]] | None = None
    bad_ops: int = 0
    v0: int = 0
    bad_version: int = 0
    wrong_bucket: set[int] = dataclasses.field(default_factory=set)
    null_insert: int = 0
    nonnull_delete: int = 0
    otxn_ne_ctxn: int = 0
    ctxn_outside: int = 0
    offset: int = 0  # global row index of the next batch's first row

    @classmethod
    def start(cls, stripes, *, name, dir_kind, dir_range) -> _EventTally:
        import numpy as np

        from acidctl.acid.dirname import BucketFile

        bf = BucketFile.parse(name)
        ends = {}
        total = 0
        for s in stripes:
            total += s.rows
            if s.rows:
                ends[total - 1] = s.index
        return cls(
            name=name,
            dir_kind=dir_kind,
            dir_range=dir_range,
            file_bucket=bf.bucket if bf else None,
            end_rows=np.array(sorted(ends), dtype=np.int64),
            ends=ends,
            last_keys=[None] * len(stripes),
        )

    def feed(self, batch) -> None:
        import numpy as np

        op = batch.column(0).to_numpy(zero_copy_only=False)
        ot = batch.column(1).to_numpy(zero_copy_only=False).astype(np.int64)
        bk = batch.column(2).to_numpy(zero_copy_only=False).astype(np.int64)
        rid = batch.column(3).to_numpy(zero_copy_only=False).astype(np.int64)
        ct = batch.column(4).to_numpy(zero_copy_only=False).astype(np.int64)
        self._operations(op)
        self._key_order(ot, bk, rid)
        self._stripe_ends(batch.num_rows, ot, bk, rid)
        self._bucket_properties(bk)
        if batch.num_columns > 5:
            self._row_nullness(op, np.asarray(batch.column(5).is_valid().to_numpy(zero_copy_only=False)))
        self._transactions(op, ot, ct)
        self.offset += batch.num_rows

    def _operations(self, op) -> None:
        ins, upd, dele = event_stats(op)
        self.counts["inserts"] += ins
        self.counts["updates"] += upd
        self.counts["deletes"] += dele
        self.bad_ops += int(((op < 0) | (op > 2)).sum())

    def _key_order(self, ot, bk, rid) -> None:
        """Strictly increasing (otxn, bucket as signed int, rowId), across batches too."""
        if self.unsorted_at is not None:
            return
        before = self.order.last
        at = self.order.first_break(ot, bk, rid)
        if at is not None:
            if at:
                before = (int(ot[at - 1]), int(bk[at - 1]), int(rid[at - 1]))
            assert before is not None  # a break at index 0 is against the previous batch's key
            self.unsorted_at = (self.offset + at, before, (int(ot[at]), int(bk[at]), int(rid[at])))

    def _stripe_ends(self, n: int, ot, bk, rid) -> None:
        """The key at each stripe's last row, for the key index check."""
        import numpy as np

        lo, hi = np.searchsorted(self.end_rows, [self.offset, self.offset + n])
        for g in self.end_rows[lo:hi]:
            j = int(g) - self.offset
            self.last_keys[self.ends[int(g)]] = (int(ot[j]), int(bk[j]), int(rid[j]))

    def _bucket_properties(self, bk) -> None:
        import numpy as np

        version, ids = bucketcodec.decode_array(bk)
        self.bad_version += int(((version != 0) & (version != 1)).sum())
        self.v0 += int((version == 0).sum())
        if self.file_bucket is not None:
            wrong = np.unique(ids[((version == 0) | (version == 1)) & (ids != self.file_bucket)])
            self.wrong_bucket.update(int(x) for x in wrong[:10])

    def _row_nullness(self, op, row_valid) -> None:
        self.null_insert += int(((op == 0) & ~row_valid).sum())
        self.nonnull_delete += int(((op == 2) & row_valid).sum())

    def _transactions(self, op, ot, ct) -> None:
        if self.dir_kind in ("delta",):
            self.otxn_ne_ctxn += int(((op == 0) & (ot != ct)).sum())
        if self.dir_range is not None and self.dir_kind in ("delta", "delete_delta"):
            self.ctxn_outside += int(((ct < self.dir_range[0]) | (ct > self.dir_range[1])).sum())

    def key_index_findings(self, report: FileReport, add) -> None:
        if report.key_index is None or len(report.key_index) != len(self.last_keys):
            return
        for i, (want, got) in enumerate(zip(self.last_keys, report.key_index)):
            if want is not None and tuple(got) != want:
                add(
                    "F04",
                    Severity.ERROR,
                    f"hive.acid.key.index entry {i} is {','.join(map(str, got))} but "
                    f"stripe {i} ends with key {','.join(map(str, want))}",
                )
                break

    def stats_findings(self, report: FileReport, add) -> None:
        if report.acid_stats is None:
            return
        st, counts = report.acid_stats, self.counts
        if (st["inserts"], st["updates"], st["deletes"]) != (counts["inserts"], counts["updates"], counts["deletes"]):
            is_delete_file = self.dir_kind == "delete_delta" or counts["deletes"] > 0
            add(
                "F05",
                Severity.ERROR if is_delete_file else Severity.WARN,
                "hive.acid.stats says {},{},{} (inserts,updates,deletes) but the file holds {},{},{}".format(
                    st["inserts"], st["updates"], st["deletes"], counts["inserts"], counts["updates"], counts["deletes"]
                ),
            )

    def event_findings(self, add) -> None:
        counts = self.counts
        if self.unsorted_at is not None:
            at, a, b = self.unsorted_at
            add(
                "F08",
                Severity.ERROR,
                f"events not strictly increasing by (originalTransaction, bucket, rowId) at row {at}: "
                f"{','.join(map(str, a))} then {','.join(map(str, b))}",
            )
        if self.bad_ops:
            add("F10", Severity.ERROR, f"{self.bad_ops} events with an operation code other than 0, 1, 2")
        if counts["updates"]:
            add(
                "F10", Severity.WARN, f"{counts['updates']} update events (operation 1): ACID v1 data; major-compact it"
            )
        if self.v0:
            add("F10", Severity.WARN, f"{self.v0} events with V0 bucket values (pre-Hive-3 data)")
        if self.bad_version:
            add(
                "F09",
                Severity.ERROR,
                f"{self.bad_version} events whose bucket property has a codec version other than 0/1 "
                "(Illegal 'bucket' format)",
            )
        if self.wrong_bucket:
            check = "F15" if counts["deletes"] and not counts["inserts"] else "F09"
            add(
                check,
                Severity.ERROR,
                f"events decode to {noun(len(self.wrong_bucket), 'bucket id')} {sorted(self.wrong_bucket)} but the file is {self.name} "
                f"(bucket {self.file_bucket})",
            )
        if self.null_insert:
            add("F13", Severity.WARN, f"{self.null_insert} insert events with a NULL row")
        if self.nonnull_delete:
            add("F13", Severity.WARN, f"{self.nonnull_delete} delete events with a non-NULL row")
        if self.otxn_ne_ctxn:
            add(
                "F11",
                Severity.WARN,
                f"{self.otxn_ne_ctxn} insert events with originalTransaction != currentTransaction in a delta",
            )
        if self.ctxn_outside:
            assert self.dir_range is not None
            add(
                "F12",
                Severity.ERROR,
                f"{self.ctxn_outside} events with currentTransaction outside the directory's range "
                f"{self.dir_range[0]}..{self.dir_range[1]}",
            )
