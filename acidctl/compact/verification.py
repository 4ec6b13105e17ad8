"""A compaction task's last check: the reader's merged snapshot of its bucket is the same
before and after (old inputs vs. staged outputs plus what stays), compared in key order batch
by batch when both sides stream, else as whole-bucket tables. A difference fails the task
and nothing is published.

The old side of a streaming major compaction is computed from the input batches the
compaction reads anyway (:class:`HeldOldSide`: the reader's merge kernel applied to them, kept
up to :data:`HOLD_BYTES`), so the inputs are read once; the new side is always read back from
storage. A bucket whose old side is larger, or whose reader sources differ from the
compaction's, reads its inputs a second time as before."""

from __future__ import annotations

from acidctl.compact.sources import SourceReader, coalesced, source_key, stream_delete_keys, stream_events
from acidctl.compact.transform import NotInOrder, SameSchema, StreamOrder, rename_row

#: Arrow bytes of the reader's merged old side a streaming task keeps for its verification
#: instead of reading its inputs again (issue #14: the second read was ~15 % of a task); a
#: larger bucket drops what it held and re-reads, so a task's memory stays bounded
HOLD_BYTES = 128 << 20
#: ORC input bytes -> Arrow bytes of their events, roughly (zlib'd ORC of typical rows: 4-10x);
#: a bucket whose inputs would not fit HOLD_BYTES at this ratio re-reads from the start rather
#: than hold HOLD_BYTES for nothing
EXPANSION = 10


def merged(reader: SourceReader, srcs, snapshot, columns, coln_only, *, missing_ok: bool):
    """The merged read of one bucket's ``srcs`` = (inserts, deletes) as one table (None when
    there is no insert event)."""
    from acidctl.acid import merge

    ins_srcs, del_srcs = srcs
    ins = reader.inserts(ins_srcs, missing_ok=missing_ok)
    if ins is None:
        return None
    dels = reader.deletes(del_srcs, full=False, missing_ok=missing_ok)
    keys = merge.delete_keys(dels, snapshot) if dels is not None else None
    return rename_row(merge.apply(ins, keys, snapshot), columns, coln_only)


def same(a, b) -> bool:
    """Do two merged reads hold the same events (operation aside)?"""
    if a is None or b is None:
        return (a is None or a.num_rows == 0) and (b is None or b.num_rows == 0)
    if a.num_rows != b.num_rows:
        return False
    a = a.select(["originalTransaction", "bucket", "rowId", "currentTransaction", "row"])
    b = b.select(["originalTransaction", "bucket", "rowId", "currentTransaction", "row"])
    if a.equals(b):
        return True
    # NaN != NaN in Arrow's equality: compare Python values (slow path, only on mismatch)
    return _py(a) == _py(b)


def _py(t):
    import math

    def norm(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    return [norm(r) for r in t.to_pylist()]


def merged_stream(tfs, srcs, snapshot, columns, coln_only, *, missing_ok: bool, on_batch=None):
    """The merged read of one bucket as a sequence of tables in key order; raises
    :class:`~acidctl.compact.transform.NotInOrder` when the live events do not come in key
    order (the caller then reads the bucket whole: :func:`verify_whole`)."""
    ins_srcs, del_srcs = srcs
    keys = loaded = None
    step = _ReaderMerge(snapshot, columns, coln_only)
    for t in coalesced(stream_events(tfs, ins_srcs, missing_ok=missing_ok, on_batch=on_batch)):
        if not loaded:
            keys = stream_delete_keys(tfs, del_srcs, snapshot, missing_ok=missing_ok)
            loaded = True
        yield step(t, keys)[1]


class _ReaderMerge:
    """The reader's merge of a bucket's insert batches, one at a time in stream order: the
    merged-read kernel with the reader's snapshot, the key-order check across batches, the
    row renamed to the table's columns and the schema check. :func:`merged_stream` and
    :class:`HeldOldSide` both build the old side through it, so the held one is the re-read
    one by construction."""

    def __init__(self, snapshot, columns, coln_only):
        self.snapshot, self.columns, self.coln_only = snapshot, columns, coln_only
        self.order = StreamOrder()
        self.schema = SameSchema()

    def __call__(self, t, keys):
        """(the kernel's merge of ``t``, that merge renamed); raises
        :class:`~acidctl.compact.transform.NotInOrder`."""
        from acidctl.acid import merge

        merged = merge.apply(t, keys, self.snapshot, sort=False)
        self.order.check(merged)
        live = rename_row(merged, self.columns, self.coln_only)
        self.schema.check(live)
        return merged, live


def compare_streams(a, b) -> tuple[bool, int, int]:
    """(equal, rows of a, rows of b) for two sequences of tables, aligned slice by slice."""
    na = nb = 0
    equal = True
    ta = tb = None
    oa = ob = 0
    while True:
        while ta is None or oa >= ta.num_rows:
            ta, oa = next(a, None), 0
            if ta is None:
                break
            na += ta.num_rows
        while tb is None or ob >= tb.num_rows:
            tb, ob = next(b, None), 0
            if tb is None:
                break
            nb += tb.num_rows
        if ta is None or tb is None:
            if ta is not None or tb is not None:
                equal = False
            for t in a:
                na += t.num_rows
            for t in b:
                nb += t.num_rows
            return equal, na, nb
        k = min(ta.num_rows - oa, tb.num_rows - ob)
        if equal and not same(ta.slice(oa, k), tb.slice(ob, k)):
            equal = False
        oa += k
        ob += k


class HeldOldSide:
    """The verification's old side built from the compaction's own reads: every delete-key
    stripe (:meth:`delete_stripe`) and insert batch (:meth:`add`) the task streams goes through
    the same merge as :func:`merged_stream` with the **reader's** snapshot (the merged-read
    kernel, not the compaction's transform), with the same order and schema checks. ``ok``
    turns false — and everything held is dropped — when the old side outgrows
    :data:`HOLD_BYTES` or is not in key order; :func:`verify_streaming` then reads the inputs
    again."""

    def __init__(self, task, limit: int | None = None):
        self.task = task
        self.limit = HOLD_BYTES if limit is None else limit
        self.ok = True
        self.batches: list = []
        self.nbytes = 0
        self._key_parts: list = []
        self._keys = None
        self._keys_done = False
        self._merge = _ReaderMerge(task.reader, task.columns, task.columns_coln_only)
        #: the reader's and the compactor's lists find the same write ids valid: the
        #: compaction's delete keys are the reader's (:meth:`use_keys`) and the merged batches
        #: :meth:`add` returns are the compaction's major merge (``live_inserts(merged=...)``)
        self.shared = same_validity(task.reader, task.compactor)

    @staticmethod
    def applies(task) -> bool:
        """A major compaction whose reader sources of the bucket are exactly the compaction's
        inputs (the old side is then a function of the batches the task reads), and whose
        inputs are small enough to be expected to fit :data:`HOLD_BYTES`."""
        from acidctl.compact.sources import input_bytes

        ins, dels = task.verify_old
        return (
            task.mode == "major"
            and [source_key(s) for s in ins] == [source_key(s) for s in task.inserts]
            and [source_key(s) for s in dels] == [source_key(s) for s in task.deletes]
            and input_bytes(task) * EXPANSION <= HOLD_BYTES
        )

    def delete_stripe(self, t) -> None:
        """One delete file stripe's five key columns (all of them come before any insert)."""
        from acidctl.acid import merge

        if self.ok and not self.shared:
            k = merge.delete_keys(t, self.task.reader)
            if k.num_rows:
                self._key_parts.append(k)

    def use_keys(self, keys) -> None:
        """With :attr:`shared`: the compaction's valid delete keys (the same set the reader's
        list selects from the same stripes), instead of selecting them again."""
        self._keys, self._key_parts, self._keys_done = keys, [], True

    def add(self, t):
        """One batch of insert events as :func:`~acidctl.compact.sources.stream_events` gave it;
        returns the reader's merge of it (before renaming; None once dropped).

        With :attr:`shared` the compaction takes its major merge from this return value: it
        would be the same kernel (:func:`acidctl.acid.merge.apply`) on the same batch, keys
        and write-id validity, computed twice (~2 ms of a 25k-row task's ~25, issue #14). The
        old side is still the reader's view of the inputs alone — made here from the batches
        as read, before the compaction's transform, renaming, writer, tail rewrite and staging
        — and the new side is still the output read back from storage through the reader's
        path, so the comparison still catches rows the transform drops, adds or alters, a
        file encoded, rewritten, named or placed wrongly, and a new layout that hides or
        exposes other files; what it cannot catch is a merge kernel that misreads the inputs,
        which a second call of the same kernel could not catch either (the kernel is checked
        against the reference model: tests/acid, tests/property)."""
        import pyarrow as pa

        if not self.ok:
            return None
        if not self._keys_done:
            self._keys = pa.concat_tables(self._key_parts).combine_chunks() if self._key_parts else None
            self._key_parts, self._keys_done = [], True
        try:
            merged, live = self._merge(t, self._keys)
        except NotInOrder:
            self.drop()
            return None
        self.batches.append(live)
        self.nbytes += live.nbytes
        if self.nbytes > self.limit:
            self.drop()
        return merged

    def drop(self) -> None:
        self.ok = False
        self.batches, self._key_parts, self._keys = [], [], None

    def stream(self):
        """The held old side, handed out once (memory is released as it is compared)."""
        batches, self.batches = self.batches, []
        while batches:
            yield batches.pop(0)


def same_validity(a, b) -> bool:
    """Do two write-id lists find the same write ids valid (``isWriteIdValid``: ≤ hwm, neither
    open nor aborted)? A compactor list does its reader's when no write id is open."""
    return a.hwm == b.hwm and set(a.exceptions) == set(b.exceptions)


def verify_streaming(task, held: HeldOldSide | None = None, pending: dict | None = None) -> tuple[bool, int, int]:
    """(same, rows before, rows after): the reader's merged snapshot of the bucket before and
    after, compared in key order without holding either (whole-bucket reads when a side
    turns out not to be in order). ``held``: the old side as the compaction built it (used
    when ``held.ok``); the new side is read from storage either way. ``pending``: {path of a
    written file: its :class:`~acidctl.orc.writer.PendingVerify`}, fed from the new side's
    read and finished before the comparison's verdict (a file the new side did not read whole
    is read once more by its own check)."""
    args = (task.reader, task.columns, task.columns_coln_only)
    checks = pending or {}

    def feed(src, batch):
        p = checks.get(src.path)
        if p is not None:
            p.feed(batch)

    result = None
    try:
        old = (
            held.stream()
            if held is not None and held.ok
            else merged_stream(task.tfs, task.verify_old, *args, missing_ok=False)
        )
        result = compare_streams(old, merged_stream(task.tfs, task.verify_new, *args, missing_ok=True, on_batch=feed))
    except NotInOrder:
        pass
    for p in checks.values():
        p.finish()  # the written files' own checks first, as when the writer ran them
    return result if result is not None else verify_whole(task, SourceReader(task.tfs))


def verify_whole(task, reader: SourceReader) -> tuple[bool, int, int]:
    """As :func:`verify_streaming`, with both merged reads in memory (``reader`` may hold the
    inputs already read; its cache is dropped before the new side is read)."""
    args = (task.reader, task.columns, task.columns_coln_only)
    old = merged(reader, task.verify_old, *args, missing_ok=False)
    reader.events.clear()
    new = merged(reader, task.verify_new, *args, missing_ok=True)
    return same(old, new), 0 if old is None else old.num_rows, 0 if new is None else new.num_rows


def refuse_if_changed(task, result: tuple[bool, int, int]) -> int:
    """Raise WriteVerificationFailed when the merged reads differ; the verified row count."""
    equal, n_old, n_new = result
    if not equal:
        from acidctl.errors import WriteVerificationFailed

        where = task.partition or "the table"
        raise WriteVerificationFailed(
            f"merged read of bucket {task.bucket} of {where} differs after compaction "
            f"({n_old} rows before, {n_new} after); nothing was published"
        )
    return n_old
