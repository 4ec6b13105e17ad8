"""The nothing-lost rule and the Cleaner's re-verification for insert-only tables.

An MM compaction reads every non-hidden file of the base and delta directories it compacts, at
any depth (``acidctl.mm.read.dir_files``), and never reads anything in a ``delete_delta``
directory (which an MM table cannot have) nor, unless the cluster runs with
``hive.mm.allow.originals=true`` (``--mm-allow-originals``: a major compaction without a base
then reads them, spec A.5), files in the partition root (originals). So ``clean`` may delete an
obsolete MM base/delta whatever its file names are, an original only under that setting, and
never a delete_delta directory that holds data.
"""

from __future__ import annotations

from acidctl.acid.acidstate import Kind


def not_mm_readable(kind: Kind, entry, *, allow_originals: bool = False) -> list:
    """Reader-visible, non-empty files of a child that no MM compaction reads (originals are
    read by a major compaction on a cluster with ``hive.mm.allow.originals=true``)."""
    from acidctl.compact.coverage import reader_files

    files = [f for f in reader_files(entry) if f.size > 0]
    if kind in (Kind.BASE, Kind.DELTA):
        return []
    if allow_originals and kind in (Kind.ORIGINAL_FILE, Kind.ORIGINAL_DIR):
        return []
    return files


def row_count(tfs, path: str, storage) -> int | str:
    """Rows of one data file (from its metadata; text: lines), or why it is not readable."""
    import pyarrow as pa

    from acidctl.errors import AcidctlError
    from acidctl.formats import files as ff

    try:
        data = tfs.read_bytes(path)
        fmt = storage.format
        if fmt == "orc":
            import pyarrow.orc as po

            return po.ORCFile(pa.BufferReader(data)).nrows
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows
        if fmt == "avro":
            from acidctl.formats.avrofile import _reader

            return sum(1 for _ in _reader(data))
        from acidctl.formats.textfile import TextParams, split_lines

        p = TextParams.from_properties(storage.properties)
        n = len(split_lines(ff._decompress_text(data, ff.text_codec(path))))
        return max(0, n - p.header_lines - p.footer_lines)
    except (AcidctlError, OSError, ValueError, pa.ArrowException) as e:
        return str(e)
    except Exception as e:  # fastavro raises its own exception types
        return str(e)
