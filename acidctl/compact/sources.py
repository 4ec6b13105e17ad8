"""What a compaction task reads: its sources' events (whole, or stripe by stripe), the valid
delete keys, and the ORC type the output is written with.

Within a bucket, Hive's insert sources (originals or the base, then the insert deltas in
write-id/statement order) normally hold increasing, disjoint key ranges. Then the merged
bucket is the concatenation of each source's live events, stripe by stripe, and a task needs
in memory only the bucket's valid delete keys plus a few stripes. Nothing is probed up front:
the live events are checked while streaming (:class:`acidctl.compact.transform.StreamOrder`)
and a bucket out of order is redone whole (:mod:`acidctl.compact.task`). Until issue #14 each
source's first and last keys were read first (a probe costing ~1 ms per input file, 12 % of a
compaction of many small partitions); the stream check alone decides the same cases, since
the whole-bucket path's output is the sorted live events and a stream whose live events
increase strictly is that sequence.
"""

from __future__ import annotations

from acidctl.orc.reader import key_column_stripes

#: rows per record batch when streaming a file
BATCH_ROWS = 65536


def source_key(src) -> tuple:
    """What identifies a source's events (the same file may be read as two sources)."""
    return (src.path, src.raw, src.write_id, src.statement, src.first_row_id)


def batches(f, *, columns=None, batch_rows=None):
    """A file's rows (or ``columns``) as record batches of at most :data:`BATCH_ROWS` rows
    (:meth:`acidctl.orc.reader.OrcFile.iter_batches`)."""
    return f.iter_batches(columns=columns, batch_rows=batch_rows or BATCH_ROWS)


class SourceReader:
    """Reads sources once per task (compaction inputs are re-used by the verification)."""

    def __init__(self, tfs):
        self.tfs = tfs
        self.events: dict = {}
        self.bytes_read = 0

    def inserts(self, srcs, *, missing_ok: bool = False):
        import pyarrow as pa

        from acidctl.acid.read import read_events

        tables = []
        for s in srcs:
            k = source_key(s)
            if k not in self.events:
                if missing_ok and not self.tfs.exists(s.path):
                    continue
                self.events[k] = read_events(self.tfs, s)
                self.bytes_read += self._size(s.path)
            t = self.events[k]
            if t.num_rows:
                tables.append(t)
        if not tables:
            return None
        return pa.concat_tables(tables, promote_options="permissive")

    def deletes(self, srcs, *, full: bool, missing_ok: bool = False):
        """Delete-file events: all six columns (``full``) or the five key columns."""
        import pyarrow as pa

        tables = []
        for s in srcs:
            k = ("full" if full else "keys",) + source_key(s)
            alt = ("full",) + source_key(s)
            if k not in self.events and alt in self.events:
                k = alt
            if k not in self.events:
                if missing_ok and not self.tfs.exists(s.path):
                    continue
                if full:
                    from acidctl.acid.read import read_events

                    self.events[k] = read_events(self.tfs, s)
                else:
                    parts = list(key_column_stripes(self.tfs, s.path))
                    self.events[k] = pa.concat_tables(parts) if parts else None
                self.bytes_read += self._size(s.path)
            t = self.events[k]
            if t is not None and t.num_rows:
                tables.append(t)
        if not tables:
            return None
        return pa.concat_tables(tables, promote_options="permissive")

    def _size(self, path: str) -> int:
        try:
            return self.tfs.info(path).size
        except Exception:
            return 0


def stream_delete_keys(tfs, srcs, snapshot, *, missing_ok: bool = False, on_stripe=None):
    """The valid delete keys of ``srcs`` (key columns read stripe by stripe; only valid keys
    are kept); ``on_stripe(table)`` sees each stripe's five key columns."""
    import pyarrow as pa

    from acidctl.acid import merge

    keys = []
    for s in srcs:
        if missing_ok and not tfs.exists(s.path):
            continue
        for t in key_column_stripes(tfs, s.path):
            if on_stripe is not None:
                on_stripe(t)
            k = merge.delete_keys(t, snapshot)
            if k.num_rows:
                keys.append(k)
    return pa.concat_tables(keys).combine_chunks() if keys else None


def stream_events(tfs, srcs, *, missing_ok: bool = False, on_batch=None):
    """Every source's events, one batch at a time, as ACID tables (raw files get their
    synthetic row ids counted across batches); empty batches are skipped. Raises
    :class:`~acidctl.compact.transform.NotStreamable` for a non-raw source that is not an
    ACID file. ``on_batch(src, batch)`` sees every record batch as read from the file (the
    file's own columns), e.g. for the written file's checks during the verification."""
    import pyarrow as pa

    from acidctl.acid import merge
    from acidctl.orc import bucketcodec
    from acidctl.orc.reader import OrcFile

    for s in srcs:
        if missing_ok and not tfs.exists(s.path):
            continue
        with OrcFile(tfs, s.path, arrow_footer=True) as f:
            if not s.raw and not f.is_acid:
                from acidctl.compact.transform import NotStreamable

                raise NotStreamable(f"{f.display_path} is not an ACID file")
            pos = s.first_row_id
            bp = bucketcodec.encode(s.bucket, s.statement) if s.raw else 0
            for b in batches(f):
                if on_batch is not None:
                    on_batch(s, b)
                t = pa.Table.from_batches([b])
                if s.raw:
                    t = merge.with_synthetic_ids(t, write_id=s.write_id, bucket_property=bp, first_row_id=pos)
                    pos += t.num_rows
                else:
                    t = merge.normalise(t)
                yield t


def coalesced(tables, rows: int = BATCH_ROWS):
    """``tables`` (event tables in stream order) regrouped into tables of about ``rows`` rows:
    consecutive tables with the same schema are concatenated (zero-copy: one table of several
    chunks) until they hold ``rows`` rows; a table of another schema starts a new group.

    Why: Hive's deltas are small (a bucket of many small partitions is one base stripe plus
    ten 500-row delta files, issue #14) and every table a compaction task handles costs a fixed
    ~0.3 ms (a dozen Arrow compute calls in the merge and counts, the order and bucket checks,
    an ORC writer call, the verification's merge): grouping them removed about a fifth of such a
    task's CPU. The events and their order are unchanged, so is everything computed from them."""
    import pyarrow as pa

    group: list = []
    n = 0
    schema = None
    for t in tables:
        if group and (n >= rows or not t.schema.equals(schema)):
            yield group[0] if len(group) == 1 else pa.concat_tables(group)
            group, n = [], 0
        if not group:
            schema = t.schema
        group.append(t)
        n += t.num_rows
    if group:
        yield group[0] if len(group) == 1 else pa.concat_tables(group)


# -- output -----------------------------------------------------------------------------------


def output_type(tfs, srcs) -> str | None:
    """The ORC type string an output made from ``srcs`` is written with: the newest source's
    (highest write id, then statement, then Hive's read order), None without sources.

    Why: the data is read through Arrow, which has no char(n)/varchar(n), so the written file
    would say ``string``; Hive's compactor writes the table's types, and the newest file
    carries the table's current ones. Only kinds and lengths are taken from it (field names
    come from the written data, after ``rename_row``). Raw (original) files hold the row
    alone: their type is wrapped in the ACID struct."""
    from acidctl.orc import footer
    from acidctl.orc.acidfile import acid_type_string
    from acidctl.orc.reader import OrcFile

    if not srcs:
        return None
    newest = max(enumerate(srcs), key=lambda p: (*_write_id(p[1]), p[0]))[1]
    with OrcFile(tfs, newest.path) as f:
        text = footer.type_string(footer.types_of(f.schema))
    return acid_type_string(text) if newest.raw else text


def _write_id(src) -> tuple[int, int]:
    """(write id, statement) of a source: raw files carry theirs, ACID files are named by their
    directory (``base_N``: N; ``delta_M_N_S``: N, S); 0 when the directory is not an ACID one."""
    from acidctl.acid.dirname import BaseDir, parse_acid_dir

    if src.raw:
        return src.write_id, src.statement
    d = parse_acid_dir(src.path.rstrip("/").rsplit("/", 2)[-2]) if "/" in src.path else None
    if d is None:
        return 0, 0
    if isinstance(d, BaseDir):
        return d.write_id, 0
    return d.max_write_id, max(d.statement_id or 0, 0)


def input_bytes(task) -> int:
    """Bytes of the task's distinct input files."""
    seen = set()
    total = 0
    for s in list(task.inserts) + list(task.deletes):
        if source_key(s) in seen:
            continue
        seen.add(source_key(s))
        try:
            total += task.tfs.info(s.path).size
        except Exception:
            pass
    return total
