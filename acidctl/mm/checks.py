"""``acidctl state`` checks for insert-only tables (../shared/spec/insert-only-and-hive2.md A.10).

Directory checks (always): MM01 files in the partition root without a base (invisible to Hive
while ``hive.mm.allow.originals=false``; with ``--mm-allow-originals`` they are read, no MM01), MM02 aborted deltas, MM03 ``_tmp.delta_*`` /
``_tmp.base_*`` manifest directories older than the grace period, MM04 ``bucket_N`` files or
``_orc_acid_version`` (full-ACID data), MM05 ``delete_delta`` directories, MM06
``_metadata_acid`` in the partition root, MM07 text tables with header/footer line counts.

File checks (``--deep``), on every file a reader opens: MM04 an ORC file with the ACID event
schema; MM08 a file that is not of the table's format (or not readable in it); F07 ZSTD ORC
(Hive 3.1 cannot read it). The full-ACID footer checks F01–F15 (key index, ``hive.acid.stats``,
...) do not apply: MM files are plain files and carry no ACID metadata.
"""

from __future__ import annotations

from acidctl.acid.acidstate import Kind
from acidctl.acid.dirname import ORC_ACID_VERSION_FILE
from acidctl.findings import Finding, Severity
from acidctl.fs import join_path
from acidctl.units import plural


#: full-ACID checks that do not apply to insert-only tables: M01 (MM directories never hold
#: ``_orc_acid_version``), S07 (originals of an MM table are not read with synthetic ROW__IDs: MM01)
NOT_FOR_MM = frozenset({"M01", "S07", "D12"})  # D12: plain files may be text, Parquet, ...


def directory_findings(
    lst,
    st,
    *,
    properties: dict | None = None,
    now: float | None = None,
    grace_seconds: float = 86400.0,
    allow_originals: bool = False,
) -> list[Finding]:
    import time

    now = time.time() if now is None else now
    out: list[Finding] = []
    props = properties or {}
    base = lst.path

    def add(check, sev, path, msg):
        out.append(Finding(check, sev, path, msg))

    if st.base is None and st.originals and not allow_originals:
        for o in st.originals[:20]:
            add(
                "MM01",
                Severity.WARN,
                join_path(base, o.rel),
                "a file in the partition root of an insert-only table: invisible to Hive readers while "
                "hive.mm.allow.originals=false (the default); other engines read it",
            )
    for c in st.aborted:
        if c.kind is Kind.DELTA:
            add(
                "MM02",
                Severity.WARN,
                c.path,
                "aborted delta (Hive 3 removes it only during an insert-only compaction, "
                "minor or major; `acidctl clean` removes it once covered)",
            )
    for e in lst.entries:
        path = join_path(base, e.name)
        if e.is_dir and e.name.startswith(("_tmp.delta_", "_tmp.base_")):
            age = now - e.mtime if e.mtime is not None else None
            if age is None or age > grace_seconds:
                add(
                    "MM03",
                    Severity.WARN,
                    path,
                    "manifest directory of a writer that did not reach job commit: its "
                    "target directory may hold uncommitted files",
                )
        if not e.is_dir and e.name == "_metadata_acid":
            add(
                "MM06",
                Severity.INFO,
                path,
                "_metadata_acid in the partition root: trace of an empty Hive 3 insert-only compaction",
            )
        if e.is_dir and e.name.startswith("delete_delta_"):
            add(
                "MM05",
                Severity.ERROR,
                path,
                "delete_delta directory in an insert-only table (no UPDATE/DELETE exists for insert-only tables)",
            )
        if e.is_dir and e.name.startswith(("base_", "delta_")):
            if e.has_file(ORC_ACID_VERSION_FILE):
                add(
                    "MM04",
                    Severity.ERROR,
                    path,
                    "_orc_acid_version in an insert-only table's directory: full-ACID data",
                )
            bucket = [f.name for f in e.files if f.name.startswith("bucket_")]
            if bucket:
                add(
                    "MM04",
                    Severity.ERROR,
                    join_path(path, bucket[0]),
                    f"{plural(len(bucket), 'bucket_N file')} in an insert-only table: full-ACID data, not MM files",
                )
    for key in ("skip.header.line.count", "skip.footer.line.count"):
        v = props.get(key, "").strip()
        if v and v != "0":
            add(
                "MM07",
                Severity.WARN,
                base,
                f"{key}={v}: Hive's writers write no header/footer, so after a "
                "compaction readers would skip real rows (acidctl refuses to compact)",
            )
    return out


def deep_findings(tfs, lst, st, *, storage=None, hive_version: int = 3, allow_originals: bool = False) -> list[Finding]:
    """Open every file a reader reads (base and current deltas) and check it is plain data in
    the table's format (``storage``; None: whatever format the file announces)."""
    import pyarrow as pa

    from acidctl.formats.files import _ACID_FIELDS, sniff, text_codec
    from acidctl.mm.read import read_plan

    out: list[Finding] = []
    try:
        files = read_plan(lst, st, allow_originals=allow_originals)
    except Exception:
        return out  # MM05 is reported by the directory checks
    want = storage.format if storage is not None else None
    for f in files:
        shown = tfs.display(f.path)
        try:
            with tfs.open(f.path) as fh:
                head = fh.read(4)
        except Exception as e:
            out.append(Finding("MM08", Severity.ERROR, shown, f"cannot open the file: {e}"))
            continue
        got = sniff(head)
        if want is not None and want != "text" and got != want:
            out.append(
                Finding(
                    "MM08",
                    Severity.ERROR,
                    shown,
                    f"not a {want} file ({'a ' + got + ' file' if got else 'no ' + want + ' magic'}); "
                    f"the table stores {want}",
                )
            )
            continue
        if want == "text" and got is not None:
            out.append(Finding("MM08", Severity.ERROR, shown, f"a {got} file in a text table"))
            continue
        fmt = want or got
        try:
            if fmt == "orc":
                import pyarrow.orc as po

                orc = po.ORCFile(pa.BufferReader(tfs.read_bytes(f.path)))
                names = [n.lower() for n in orc.schema.names]
                if names == list(_ACID_FIELDS):
                    out.append(
                        Finding(
                            "MM04",
                            Severity.ERROR,
                            shown,
                            "an ORC file with the ACID event schema in an insert-only table: full-ACID data",
                        )
                    )
                if str(orc.compression).upper() == "ZSTD":
                    out.append(
                        Finding(
                            "F07",
                            Severity.ERROR if hive_version == 3 else Severity.WARN,
                            shown,
                            "ZSTD compression: Hive 3.1 (ORC 1.5) cannot read it",
                        )
                    )
            elif fmt == "parquet":
                import pyarrow.parquet as pq

                pq.ParquetFile(pa.BufferReader(tfs.read_bytes(f.path))).metadata
            elif fmt == "avro":
                from acidctl.formats.avrofile import file_info

                file_info(tfs.read_bytes(f.path))
            elif fmt == "text":
                text_codec(f.path)
        except Exception as e:
            out.append(Finding("MM08", Severity.ERROR, shown, f"not readable as {fmt}: {e}"))
    return out
