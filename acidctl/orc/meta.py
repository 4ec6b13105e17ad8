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
from typing import Any, Generator

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
        self._gen = _event_checks(stripes, report, add, name=name, dir_kind=dir_kind, dir_range=dir_range)
        next(self._gen)

    def feed(self, batch) -> None:
        if batch.num_columns > len(self.columns):
            batch = batch.select(list(range(len(self.columns))))
        self.rows += batch.num_rows
        self._gen.send(batch)

    def finish(self) -> None:
        try:
            self._gen.send(None)
        except StopIteration:
            pass


def _event_checks(stripes, report: FileReport, add, *, name, dir_kind, dir_range) -> Generator[None, Any, None]:
    """A generator receiving the batches (``send``), None at the end; see :class:`EventChecks`."""
    import numpy as np

    from acidctl.acid.dirname import BucketFile

    bf = BucketFile.parse(name)  # only bucket_N names promise a bucket id (§4.2)
    file_bucket = bf.bucket if bf else None
    counts = {"inserts": 0, "updates": 0, "deletes": 0}
    order = KeyOrder()
    unsorted_at: tuple[int, tuple[int, int, int], tuple[int, int, int]] | None = None
    bad_ops = 0
    v0 = 0
    bad_version = 0
    wrong_bucket: set[int] = set()
    null_insert = 0
    nonnull_delete = 0
    otxn_ne_ctxn = 0
    ctxn_outside = 0
    last_keys: list = [None] * len(stripes)
    ends = {}  # global row index of each stripe's last row -> stripe index
    total = 0
    for s in stripes:
        total += s.rows
        if s.rows:
            ends[total - 1] = s.index
    end_rows = np.array(sorted(ends), dtype=np.int64)
    offset = 0  # global row index of the batch's first row
    while True:
        batch = yield
        if batch is None:
            break
        n = batch.num_rows
        op = batch.column(0).to_numpy(zero_copy_only=False)
        ot = batch.column(1).to_numpy(zero_copy_only=False).astype(np.int64)
        bk = batch.column(2).to_numpy(zero_copy_only=False).astype(np.int64)
        rid = batch.column(3).to_numpy(zero_copy_only=False).astype(np.int64)
        ct = batch.column(4).to_numpy(zero_copy_only=False).astype(np.int64)
        row_valid = (
            np.asarray(batch.column(5).is_valid().to_numpy(zero_copy_only=False)) if batch.num_columns > 5 else None
        )
        ins, upd, dele = event_stats(op)
        counts["inserts"] += ins
        counts["updates"] += upd
        counts["deletes"] += dele
        bad_ops += int(((op < 0) | (op > 2)).sum())
        # sort order: strictly increasing (otxn, bucket as signed int, rowId), across batches too
        if unsorted_at is None:
            before = order.last
            at = order.first_break(ot, bk, rid)
            if at is not None:
                if at:
                    before = (int(ot[at - 1]), int(bk[at - 1]), int(rid[at - 1]))
                assert before is not None  # a break at index 0 is against the previous batch's key
                unsorted_at = (offset + at, before, (int(ot[at]), int(bk[at]), int(rid[at])))
        # the key at each stripe's last row, for the key index check
        lo, hi = np.searchsorted(end_rows, [offset, offset + n])
        for g in end_rows[lo:hi]:
            j = int(g) - offset
            last_keys[ends[int(g)]] = (int(ot[j]), int(bk[j]), int(rid[j]))
        offset += n
        # bucket properties
        version, ids = bucketcodec.decode_array(bk)
        bad_version += int(((version != 0) & (version != 1)).sum())
        v0 += int((version == 0).sum())
        if file_bucket is not None:
            wrong = np.unique(ids[((version == 0) | (version == 1)) & (ids != file_bucket)])
            wrong_bucket.update(int(x) for x in wrong[:10])
        if row_valid is not None:
            null_insert += int(((op == 0) & ~row_valid).sum())
            nonnull_delete += int(((op == 2) & row_valid).sum())
        if dir_kind in ("delta",):
            otxn_ne_ctxn += int(((op == 0) & (ot != ct)).sum())
        if dir_range is not None and dir_kind in ("delta", "delete_delta"):
            ctxn_outside += int(((ct < dir_range[0]) | (ct > dir_range[1])).sum())
    report.event_counts = counts

    if report.key_index is not None and len(report.key_index) == len(stripes):
        for i, (want, got) in enumerate(zip(last_keys, report.key_index)):
            if want is not None and tuple(got) != want:
                add(
                    "F04",
                    Severity.ERROR,
                    f"hive.acid.key.index entry {i} is {','.join(map(str, got))} but "
                    f"stripe {i} ends with key {','.join(map(str, want))}",
                )
                break
    if report.acid_stats is not None:
        st = report.acid_stats
        if (st["inserts"], st["updates"], st["deletes"]) != (counts["inserts"], counts["updates"], counts["deletes"]):
            is_delete_file = dir_kind == "delete_delta" or counts["deletes"] > 0
            add(
                "F05",
                Severity.ERROR if is_delete_file else Severity.WARN,
                "hive.acid.stats says {},{},{} (inserts,updates,deletes) but the file holds {},{},{}".format(
                    st["inserts"], st["updates"], st["deletes"], counts["inserts"], counts["updates"], counts["deletes"]
                ),
            )
    if unsorted_at is not None:
        at, a, b = unsorted_at
        add(
            "F08",
            Severity.ERROR,
            f"events not strictly increasing by (originalTransaction, bucket, rowId) at row {at}: "
            f"{','.join(map(str, a))} then {','.join(map(str, b))}",
        )
    if bad_ops:
        add("F10", Severity.ERROR, f"{bad_ops} events with an operation code other than 0, 1, 2")
    if counts["updates"]:
        add("F10", Severity.WARN, f"{counts['updates']} update events (operation 1): ACID v1 data; major-compact it")
    if v0:
        add("F10", Severity.WARN, f"{v0} events with V0 bucket values (pre-Hive-3 data)")
    if bad_version:
        add(
            "F09",
            Severity.ERROR,
            f"{bad_version} events whose bucket property has a codec version other than 0/1 (Illegal 'bucket' format)",
        )
    if wrong_bucket:
        check = "F15" if counts["deletes"] and not counts["inserts"] else "F09"
        add(
            check,
            Severity.ERROR,
            f"events decode to bucket id(s) {sorted(wrong_bucket)} but the file is {name} (bucket {file_bucket})",
        )
    if null_insert:
        add("F13", Severity.WARN, f"{null_insert} insert events with a NULL row")
    if nonnull_delete:
        add("F13", Severity.WARN, f"{nonnull_delete} delete events with a non-NULL row")
    if otxn_ne_ctxn:
        add(
            "F11",
            Severity.WARN,
            f"{otxn_ne_ctxn} insert events with originalTransaction != currentTransaction in a delta",
        )
    if ctxn_outside:
        add(
            "F12",
            Severity.ERROR,
            f"{ctxn_outside} events with currentTransaction outside the directory's range "
            f"{dir_range[0]}..{dir_range[1]}",
        )
