"""``acidctl dump``: ACID ORC files as FileDump JSON lines, streamed stripe by stripe.

The library yields encoded chunks (bytes) so that the CLI can write them straight to stdout;
memory is bounded by one stripe, whatever the file size.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

from acidctl.acid.datafiles import list_data_files
from acidctl.errors import InvalidInputError, NotAcidFile, UsageError
from acidctl.fs import TableFS
from acidctl.orc.lines import SEPARATOR, SLICE_BYTES, SLICE_ROWS, json_literal, lines_bytes
from acidctl.orc.reader import OrcFile

OPERATIONS = {"insert": 0, "update": 1, "delete": 2}


@dataclasses.dataclass
class DumpOptions:
    limit: int | None = None
    columns: list[str] | None = None  # fields of `row` (ACID files) or top-level (originals)
    decode_bucket: bool = False
    operations: set[int] | None = None
    row_ids: list[tuple[int, int, int]] | None = None
    with_path: bool = False
    require_acid: bool = False
    engine: str = "auto"  # "python": force the exact row-at-a-time path (tests)


def parse_row_id(text: str) -> tuple[int, int, int]:
    parts = [p.strip() for p in text.split(",")]
    try:
        if len(parts) != 3:
            raise ValueError
        return (int(parts[0]), int(parts[1]), int(parts[2]))
    except ValueError:
        raise UsageError(f"--row-id expects WRITEID,BUCKET,ROWID (three integers), got {text!r}") from None


# -- rendering -----------------------------------------------------------------------------


class _StructView:
    """An ORC struct type restricted to some of its fields (for --columns)."""

    def __init__(self, kind, fields):
        self.kind = kind
        self.fields = fields

    def __str__(self):
        return "struct<%s>" % ",".join(f"{n}:{t}" for n, t in self.fields.items())


def _resolve(available, columns: list[str]) -> tuple[list[str], list[str]]:
    """Requested column names matched to the file's names case-insensitively (Hive column names
    are case-insensitive): (matched file names, requested names not found)."""
    by_lower = {n.lower(): n for n in available}
    found = [by_lower[c.lower()] for c in columns if c.lower() in by_lower]
    return found, [c for c in columns if c.lower() not in by_lower]


def _select(orc: OrcFile, columns: list[str] | None):
    """(arrow column names to read, [(name, ORC type)] of the rendered top-level fields)."""
    top = orc.schema.fields
    if not columns:
        return None, list(top.items())
    if orc.is_acid:
        row_name = list(top)[5]
        row_td = top[row_name]
        columns, missing = _resolve(row_td.fields, columns)
        if missing:
            raise UsageError(
                f"no such column in {orc.display_path}: {', '.join(missing)} (columns: {', '.join(row_td.fields)})"
            )
        sub = _StructView(row_td.kind, {c: row_td.fields[c] for c in row_td.fields if c in columns})
        names = list(top)[:5] + [f"{row_name}.{c}" for c in sub.fields]
        return names, [(n, top[n]) for n in list(top)[:5]] + [(row_name, sub)]
    columns, missing = _resolve(top, columns)
    if missing:
        raise UsageError(f"no such column in {orc.display_path}: {', '.join(missing)}")
    keep = [c for c in top if c in columns]
    return keep, [(c, top[c]) for c in keep]


def _acid_mask(batch, opts: DumpOptions):
    import pyarrow.compute as pc

    mask = None
    if opts.operations is not None:
        mask = pc.is_in(batch.column(0), value_set=_pa_int_array(sorted(opts.operations)))
    if opts.row_ids:
        rid = None
        for w, b, r in opts.row_ids:
            m = pc.and_(
                pc.and_(pc.equal(batch.column(1), w), pc.equal(batch.column(2), b)), pc.equal(batch.column(3), r)
            )
            rid = m if rid is None else pc.or_(rid, m)
        mask = rid if mask is None else pc.and_(mask, rid)
    return mask


def _pa_int_array(values):
    import pyarrow as pa

    return pa.array(values, pa.int32())


def _decoded_bucket(bucket_col):
    """``bucketDecoded`` JSON objects of a stripe's bucket column (:func:`bucketcodec.decode_fields`;
    ids null for an invalid version, everything null for a null property)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from acidctl.orc import bucketcodec

    col = bucket_col.combine_chunks() if isinstance(bucket_col, pa.ChunkedArray) else bucket_col
    nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool)
    version, bid, stmt = bucketcodec.decode_fields(col.fill_null(0).to_numpy(zero_copy_only=False))
    invalid = nulls | (version > 1)

    def s(a, mask):
        return pc.fill_null(pc.cast(pa.array(a, mask=mask), pa.string()), "null")

    version, bid, stmt = s(version, nulls), s(bid, invalid), s(stmt, invalid)
    return pc.binary_join_element_wise('{"version":', version, ',"bucketId":', bid, ',"statementId":', stmt, "}", "")


def dump_file(tfs: TableFS, path: str, opts: DumpOptions, budget: list[int] | None = None) -> Iterator[bytes]:
    """Yield the JSON lines of one file, a batch at a time. ``budget`` is a one-element list
    holding the rows still allowed by --limit (shared across files)."""
    from acidctl.orc import render

    with OrcFile(tfs, path) as orc:
        if opts.require_acid and not orc.is_acid:
            raise NotAcidFile(f"{orc.display_path} is not an ACID file (schema {orc.schema})")
        arrow_cols, fields = _select(orc, opts.columns)
        if not orc.is_acid and opts.row_ids:
            return  # original files have no stored row ids (see `dump --merged`)
        if not orc.is_acid and opts.operations is not None and 0 not in opts.operations:
            return  # original files hold inserts only
        prefix = [("_path", json_literal(orc.display_path))] if opts.with_path else None
        decode = opts.decode_bucket and orc.is_acid

        def render_slice(item):
            if isinstance(item, (bytes, memoryview)):  # rendered by the row-at-a-time path
                return item
            sl, stripe_fields = item
            extra = [("bucketDecoded", _decoded_bucket(sl.column(2)))] if decode else None
            return lines_bytes(render.render_batch(sl, stripe_fields, extra=extra, prefix=prefix, terminator="\n"))

        yield from _in_order(render_slice, _pieces(orc, arrow_cols, fields, opts, budget, prefix))


def _pieces(orc: OrcFile, arrow_cols, fields, opts: DumpOptions, budget, prefix):
    """What :func:`dump_file` renders, in file order: (batch slice, fields) pairs, or bytes
    the row-at-a-time path rendered. A large file is read as a stream of ORC row batches
    (:meth:`OrcFile.stream_batches`), so that reading overlaps rendering even within one
    stripe (a 1M-row stripe took 0.6 s to read before the first row was rendered:
    bench/dump.py, every type); from the first batch Arrow cannot hold (timestamps outside
    1677..2262) or read, it goes on stripe by stripe from that row."""
    from acidctl.orc.reader import SMALL_FILE_ROWS, ArrowNotRepresentable

    done = 0  # rows of the file handed out (before filters)
    far = False  # the stripe of row `done` holds values Arrow cannot hold (known from the stream)
    streamable = opts.engine != "python" and not any("." in c for c in arrow_cols or ())
    if streamable and orc.rows > SMALL_FILE_ROWS:
        import pyarrow as pa

        try:
            for batch in orc.stream_batches(columns=arrow_cols, batch_rows=STREAM_ROWS):
                if budget is not None and budget[0] <= 0:
                    return
                n = batch.num_rows
                yield from _slices(orc, batch, fields, opts, budget)
                done += n
            return
        except (pa.ArrowException, OSError, ValueError) as e:
            # the stripe of row `done` on: its own errors, or the fallbacks below
            far = isinstance(e, pa.ArrowInvalid) and "out of range" in str(e)
    start = 0  # the stripe's first row
    stripe_rows = [s.rows for s in orc.stripes()] if done else [0] * orc.num_stripes()
    for i, rows in enumerate(stripe_rows):
        skip = max(0, done - start)  # its rows the stream handed out already
        start += rows
        if done and skip >= rows:
            continue
        if budget is not None and budget[0] <= 0:
            return
        try:
            if opts.engine == "python" or far:
                far = False  # known: not read whole again only to fail the same way
                raise ArrowNotRepresentable("forced")
            batch = orc.read_stripe_arrow(i, columns=arrow_cols)
        except ArrowNotRepresentable:
            want = None if budget is None else budget[0]
            split = None if opts.engine == "python" else _split_stripe(orc, i, fields, skip, want)
            if split is None:
                yield from _python_stripe(orc, i, fields, opts, budget, prefix, skip)
                continue
            for batch, split_fields in split:
                if budget is not None and budget[0] <= 0:
                    return
                yield from _slices(orc, batch, split_fields, opts, budget)
            continue
        yield from _slices(orc, batch.slice(skip) if skip else batch, fields, opts, budget)


def _slices(orc: OrcFile, batch, fields, opts: DumpOptions, budget):
    """A batch filtered (--operation, --row-id), cut to the --limit budget and sliced for
    rendering: (slice, fields) pairs."""
    if orc.is_acid and (opts.operations is not None or opts.row_ids):
        batch = batch.filter(_acid_mask(batch, opts))
    if budget is not None:
        if batch.num_rows > budget[0]:
            batch = batch.slice(0, budget[0])
        budget[0] -= batch.num_rows
    if batch.num_rows == 0:
        return
    step = min(SLICE_ROWS, max(256, SLICE_BYTES * batch.num_rows // max(1, batch.nbytes)))
    for o in range(0, batch.num_rows, step):
        yield batch.slice(o, step), fields


#: rows a streamed read decodes at a time (:func:`_pieces`)
STREAM_ROWS = 32768
_POOL = None


def _usable_cpus() -> int:
    """The CPUs this process may run on, not the machine's: on one core the render pool only
    adds thread switches to the same work."""
    from acidctl.machine import usable_cpus

    return usable_cpus()


def _in_order(fn, items):
    """``map(fn, items)`` on a small thread pool (pyarrow kernels release the GIL), yielding
    results in order with at most a few items in flight. ``items`` may be a generator: it is
    advanced in the caller's thread, so producing the next item (reading, merging) overlaps
    with rendering the previous ones."""
    global _POOL
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    workers = min(4, _usable_cpus())
    if workers < 2 or (isinstance(items, list) and len(items) < 2):
        for it in items:
            yield fn(it)
        return
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="acidctl-render")
    window = workers * 2
    source = iter(items)
    pending: deque = deque()
    for it in source:
        pending.append(_POOL.submit(fn, it))
        if len(pending) >= window:
            break
    while pending:
        fut = pending.popleft()
        for it in source:
            pending.append(_POOL.submit(fn, it))
            break
        yield fut.result()


_TIMESTAMP_KINDS = ("TIMESTAMP", "TIMESTAMP_INSTANT")


def _has_timestamp(td) -> bool:
    kind = td.kind.name
    if kind in _TIMESTAMP_KINDS:
        return True
    if kind == "STRUCT":
        return any(_has_timestamp(t) for t in td.fields.values())
    if kind == "LIST":
        return _has_timestamp(td.type)
    if kind == "MAP":
        return _has_timestamp(td.key) or _has_timestamp(td.value)
    if kind == "UNION":
        return any(_has_timestamp(t) for t in td.cont_types)
    return False


def _split_stripe(orc: OrcFile, index: int, fields, skip: int = 0, want: int | None = None):
    """A stripe whose timestamps Arrow cannot hold (outside 1677..2262 in nanoseconds), read
    column-wise all the same: Arrow reads every column but the timestamp ones, pyorc reads
    only those (as ORC's (seconds, nanos): :mod:`acidctl.orc.tsparts`), and they are rendered
    by the vectorised timestamp code (:class:`acidctl.orc.render.TimestampParts`). Timestamp
    fields of the ACID row (or top-level ones of an original file) only; None for timestamps
    nested deeper (the row-at-a-time path handles those). Else an iterator of (batch, fields),
    SPLIT_ROWS rows at a time from row ``skip`` of the stripe: pyorc holds the GIL while it
    reads, the rendering of the rows before runs meanwhile in Arrow's kernels (which release
    it), and all but the first tenth of a large stripe is read by a child process at the same
    time, streamed back as it reads (unless ``want``, the rows the dump may still print, ends
    in that first tenth)."""
    import pyorc

    from acidctl.orc import tsparts

    if orc.is_acid:
        row_name, row_td = fields[5]
        container = list(row_td.fields.items())
        prefix = row_name + "."
        top_names = [n for n, _ in fields[:5]]
    else:
        container, prefix, top_names, row_name = list(fields), "", [], None
    ts = [n for n, t in container if t.kind.name in _TIMESTAMP_KINDS]
    if not ts or any(_has_timestamp(t) for n, t in container if n not in ts):
        return None
    others = [n for n, _ in container if n not in ts]
    cols = top_names + [prefix + n for n in others]
    got = orc.read_stripe_arrow(index, columns=cols) if cols else None
    columns = [prefix + n for n in ts]
    try:
        stripe = tsparts.open_stripe(orc._source, index, columns, skip)
    except (pyorc.errors.ORCError, ValueError):
        return None
    total = orc.stripes()[index].rows - skip
    if got is not None:
        got = got.slice(skip)
    own, child = total, None
    if _usable_cpus() >= 2:
        # this process renders every row (and has more to start): it reads a tenth, the child
        # the rest (balanced CPU on two cores; bench/dump.py, far timestamps)
        own = total // 10
        if want is None or want > own:
            child = tsparts.start_child(
                orc.local_path, index, columns, skip + own, total - own, orc.is_acid, SPLIT_ROWS
            )
        if child is None:
            own = total
    return _split_chunks(orc, index, stripe, child, own, total, skip, got, fields, container, ts, top_names, row_name)


#: rows of a split stripe (:func:`_split_stripe`) read by pyorc at a time
SPLIT_ROWS = 32768


def _split_chunks(
    orc: OrcFile, index, stripe, child, own, total, skip, got, fields, container, ts, top_names, row_name
):
    import pyarrow as pa
    import pyorc

    from acidctl.errors import CorruptOrcFile
    from acidctl.orc import render, tsparts

    if orc.is_acid:
        row_td = fields[5][1]
        row_view = _StructView(row_td.kind, {nm: (render.TimestampParts() if nm in ts else t) for nm, t in container})
        out_fields = list(fields[:5]) + [(row_name, row_view)]
    else:
        out_fields = [(nm, render.TimestampParts() if nm in ts else t) for nm, t in container]
    names = [nm for nm, _ in out_fields]

    def batch(block, first):
        n = block.rows
        part = got.slice(first, n) if got is not None else None
        parts = {}
        for name, (valid, secs, nanos) in zip(ts, block.columns):
            mask = None if valid is None else pa.array(~valid)
            parts[name] = pa.StructArray.from_arrays([pa.array(secs), pa.array(nanos)], ["seconds", "nanos"], mask=mask)
        if orc.is_acid:
            assert part is not None  # the five key columns are always read
            arrow_row = part.column(row_name) if row_name in part.schema.names else None
            children = []
            for nm, _ in container:
                if nm in parts:
                    children.append(parts[nm])
                else:  # a non-timestamp field: read from Arrow with the row
                    assert arrow_row is not None
                    children.append(arrow_row.field(nm))
            mask = None if block.row_valid is None else pa.array(~block.row_valid)
            row = pa.StructArray.from_arrays(children, [nm for nm, _ in container], mask=mask)
            arrays = [part.column(c) for c in top_names] + [row]
        else:
            arrays = [parts[nm] if nm in parts else part.column(nm) for nm, _ in container]
        if any(len(a) != n for a in arrays):
            raise CorruptOrcFile(f"stripe {index} of {orc.display_path}: columns of different lengths")
        return pa.RecordBatch.from_arrays(arrays, names=names), out_fields

    def read(count):
        try:
            return tsparts.read_block(stripe, count, orc.is_acid, len(ts))
        except (pyorc.errors.ORCError, ValueError) as e:
            raise CorruptOrcFile(f"cannot read stripe {index} of {orc.display_path}: {e}") from None

    done = 0
    try:
        while done < total:
            if child is not None and done >= own:
                for block in child.blocks():  # the child's rows, as it reads them
                    yield batch(block, done)
                    done += block.rows
                child.cancel()  # ended (or stopped short): reaped now, not when collected
                child = None
                if done < total:  # the child stopped short: this process reads on
                    stripe.seek(skip + done)
                continue
            limit = own if child is not None else total
            block = read(min(SPLIT_ROWS, limit - done))
            if not block.rows:
                return
            yield batch(block, done)
            done += block.rows
    finally:
        if child is not None:
            child.cancel()


def _python_stripe(orc: OrcFile, index: int, fields, opts: DumpOptions, budget, prefix, skip: int = 0):
    from acidctl.orc import bucketcodec, render

    top = list(orc.schema.fields)
    positions = [top.index(n) for n, _ in fields]
    rows = []
    for row in orc.read_stripe_rows(index, converters=render.python_converters(), skip=skip):
        if orc.is_acid:
            if opts.operations is not None and row[0] not in opts.operations:
                continue
            if opts.row_ids and (row[1], row[2], row[3]) not in opts.row_ids:
                continue
        if budget is not None:
            if budget[0] <= 0:
                break
            budget[0] -= 1
        rows.append(row)
    if opts.columns and orc.is_acid:
        wanted = {c.lower() for c in opts.columns}
        keep = [i for i, n in enumerate(orc.schema.fields[top[5]].fields) if n.lower() in wanted]
        rows = [r[:5] + ((None if r[5] is None else tuple(r[5][i] for i in keep)),) for r in rows]
    texts = render.render_rows_python(rows, fields, positions)
    out = []
    for row, text in zip(rows, texts):
        if prefix:
            text = "{" + '"_path":' + prefix[0][1] + "," + text[1:]
        if opts.decode_bucket and orc.is_acid:
            d = bucketcodec.decode(row[2])
            text = text[:-1] + ',"bucketDecoded":{"version":%d,"bucketId":%s,"statementId":%s}}' % (
                d.version,
                "null" if d.bucket_id is None else d.bucket_id,
                "null" if d.statement_id is None else d.statement_id,
            )
        out.append(text)
    if out:
        yield ("\n".join(out) + "\n").encode("utf-8")


def dump(
    tfs: TableFS, root: str, opts: DumpOptions, *, framing: bool, budget: list[int] | None = None, on_error=None
) -> Iterator[bytes]:
    """All files under ``root``; with ``framing`` each file ends with FileDump's separator.
    ``budget`` ([rows left]) lets several roots share one --limit. ``on_error(exc)``: called for
    a file that is not readable ORC, and the dump goes on with the next file (as Java FileDump
    does); without it the error is raised. With ``--row-id`` / ``--operation`` (filters Java
    FileDump does not have) a file without a matching event prints nothing, not even the
    separator."""
    files = list_data_files(tfs, root)
    filtered = bool(opts.row_ids) or opts.operations is not None
    if not files:
        raise InvalidInputError(f"no data files under {tfs.display(root)}")
    if budget is None and opts.limit is not None:
        budget = [opts.limit]
    for path in files:
        if budget is not None and budget[0] <= 0:
            break
        wrote = False
        try:
            for chunk in dump_file(tfs, path, opts, budget):
                wrote = wrote or bool(chunk)
                yield chunk
        except InvalidInputError as e:
            from acidctl.mm.plain import fallback  # Parquet/Avro files of insert-only tables

            plain = fallback(tfs, path, opts, budget)
            if plain is not None:
                yield from plain
                if framing:
                    yield SEPARATOR
                continue
            if on_error is None:
                raise
            on_error(e)
            continue
        if framing and (wrote or not filtered):
            yield SEPARATOR
