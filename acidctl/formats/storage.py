"""Which file format and properties an insert-only table stores its files with
(../shared/spec/insert-only-and-hive2.md A.3, A.8, A.9).

The format follows from the SerDe class (``SERDES.SLIB``) and the input format
(``SDS.INPUT_FORMAT``); the properties a SerDe sees are the SerDe parameters
(``SERDE_PARAMS``) overlaid by the table parameters (``TABLE_PARAMS``), as Hive builds them
(``MetaStoreUtils.getSchemaWithoutCols``). Offline (a path without a metastore) the user names
the format (``--format``) and SerDe properties (``--serde-property``).
"""

from __future__ import annotations

import dataclasses

from acidctl.errors import InvalidInputError, UsageError

ORC, PARQUET, AVRO, TEXT = "orc", "parquet", "avro", "text"
FORMATS = (ORC, PARQUET, AVRO, TEXT)

_BY_SERDE = {
    "org.apache.hadoop.hive.ql.io.orc.orcserde": ORC,
    "org.apache.hadoop.hive.ql.io.parquet.serde.parquethiveserde": PARQUET,
    "org.apache.hadoop.hive.serde2.avro.avroserde": AVRO,
    "org.apache.hadoop.hive.serde2.lazy.lazysimpleserde": TEXT,
}
_BY_INPUT = {
    "org.apache.hadoop.hive.ql.io.orc.orcinputformat": ORC,
    "org.apache.hadoop.hive.ql.io.parquet.mapredparquetinputformat": PARQUET,
    "org.apache.hadoop.hive.ql.io.avro.avrocontainerinputformat": AVRO,
    "org.apache.hadoop.mapred.textinputformat": TEXT,
}
TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"


class UnsupportedFormat(InvalidInputError):
    """A storage format acidctl cannot read or write (RCFile, SequenceFile, JSON SerDe, ...)."""


@dataclasses.dataclass
class Storage:
    format: str  # orc | parquet | avro | text
    properties: dict[str, str] = dataclasses.field(default_factory=dict)  # SerDe params + table params
    serde_lib: str | None = None
    input_format: str | None = None
    bucket_count: int = -1
    source: str = "metastore"  # metastore | --format
    #: SORT_COLS of the storage descriptor (SORTED BY); None when the metastore could not say
    sort_columns: list[str] | None = None

    def to_dict(self) -> dict:
        return {
            "format": self.format,
            "serde_lib": self.serde_lib,
            "input_format": self.input_format,
            "bucket_count": self.bucket_count,
            "sort_columns": self.sort_columns,
            "source": self.source,
        }

    def compression_property(self) -> str | None:
        """The codec a table property asks for (``orc.compress``, ``parquet.compression``,
        ``avro.output.codec``); None when the table sets none."""
        key = {ORC: "orc.compress", PARQUET: "parquet.compression", AVRO: "avro.output.codec"}.get(self.format)
        v = self.properties.get(key) if key else None
        return v.strip() if v and v.strip() else None


def detect_format(serde_lib: str | None, input_format: str | None) -> str:
    """The format of a storage descriptor; one clear error (exit 7) for anything else."""
    slib = (serde_lib or "").strip().lower()
    inf = (input_format or "").strip().lower()
    by_inf = _BY_INPUT.get(inf)
    by_serde = _BY_SERDE.get(slib)
    if by_serde == TEXT:
        if by_inf in (None, TEXT) and (not inf or by_inf == TEXT):
            return TEXT
        raise UnsupportedFormat(
            f"LazySimpleSerDe with input format {input_format} (e.g. SequenceFile) is not "
            "supported; acidctl reads ORC, Parquet, Avro and TextFile insert-only tables"
        )
    if by_serde is not None:
        return by_serde
    if not slib and by_inf is not None:
        return by_inf
    what = serde_lib or input_format or "unknown"
    raise UnsupportedFormat(
        f"storage format {what} is not supported; acidctl reads ORC, Parquet, Avro and "
        "TextFile (LazySimpleSerDe) insert-only tables"
    )


def offline(
    fmt: str | None, serde_properties: dict[str, str] | None = None, table_properties: dict[str, str] | None = None
) -> Storage:
    """``--format`` plus ``--serde-property`` / table properties for a path target."""
    if fmt is None:
        raise UsageError(
            "an insert-only table given as a path needs --format orc|parquet|avro|text",
            hint="or name it as DB.TABLE with a metastore configured",
        )
    f = fmt.strip().lower()
    if f == "textfile":
        f = TEXT
    if f not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    props = dict(serde_properties or {})
    props.update(table_properties or {})
    return Storage(format=f, properties=props, source="--format")


def lookup(ms, info) -> Storage:
    """The storage descriptor of a metastore table (or of its partition, when ``info`` names one):
    SDS, SERDES, SERDE_PARAMS, overlaid by TABLE_PARAMS (and PARTITION_PARAMS)."""
    import sqlalchemy as sa

    sds = sa.table(
        "SDS", sa.column("SD_ID"), sa.column("INPUT_FORMAT"), sa.column("NUM_BUCKETS"), sa.column("SERDE_ID")
    )
    tbls = sa.table("TBLS", sa.column("TBL_ID"), sa.column("SD_ID"))
    parts = sa.table(
        "PARTITIONS", sa.column("PART_ID"), sa.column("TBL_ID"), sa.column("PART_NAME"), sa.column("SD_ID")
    )
    serdes = sa.table("SERDES", sa.column("SERDE_ID"), sa.column("SLIB"))
    sparams = sa.table("SERDE_PARAMS", sa.column("SERDE_ID"), sa.column("PARAM_KEY"), sa.column("PARAM_VALUE"))
    pparams = sa.table("PARTITION_PARAMS", sa.column("PART_ID"), sa.column("PARAM_KEY"), sa.column("PARAM_VALUE"))
    with ms.read() as conn:
        part_id = sd_id = None
        if getattr(info, "partition", None):
            row = conn.execute(
                sa.select(parts.c.PART_ID, parts.c.SD_ID).where(
                    parts.c.TBL_ID == info.tbl_id, parts.c.PART_NAME == info.partition
                )
            ).first()
            part_id, sd_id = (row[0], row[1]) if row else (None, None)
        if part_id is None:
            sd_id = conn.execute(sa.select(tbls.c.SD_ID).where(tbls.c.TBL_ID == info.tbl_id)).scalar()
        row = conn.execute(
            sa.select(sds.c.INPUT_FORMAT, sds.c.NUM_BUCKETS, sds.c.SERDE_ID).where(sds.c.SD_ID == sd_id)
        ).first()
        inf, nb, serde_id = (row[0], row[1], row[2]) if row else (info.input_format, info.bucket_count, None)
    slib, sprops = None, {}
    if serde_id is not None:
        try:
            with ms.read() as conn:  # SERDES may be absent from a minimal metastore database
                slib = conn.execute(sa.select(serdes.c.SLIB).where(serdes.c.SERDE_ID == serde_id)).scalar()
                sprops = {
                    k: (v or "")
                    for k, v in conn.execute(
                        sa.select(sparams.c.PARAM_KEY, sparams.c.PARAM_VALUE).where(sparams.c.SERDE_ID == serde_id)
                    )
                }
        except Exception:  # no SERDES table: decide from the input format alone
            slib, sprops = None, {}
    sort_columns: list[str] | None = None
    if sd_id is not None:
        scols = sa.table("SORT_COLS", sa.column("SD_ID"), sa.column("COLUMN_NAME"), sa.column("INTEGER_IDX"))
        try:
            with ms.read() as conn:  # SORT_COLS may be absent from a minimal metastore database
                sort_columns = [
                    str(r[0])
                    for r in conn.execute(
                        sa.select(scols.c.COLUMN_NAME).where(scols.c.SD_ID == sd_id).order_by(scols.c.INTEGER_IDX)
                    )
                ]
        except Exception:  # unknown: callers that depend on it refuse
            sort_columns = None
    props = dict(sprops)
    props.update(info.params or {})
    if part_id is not None:
        with ms.read() as conn:
            props.update(
                {
                    k: (v or "")
                    for k, v in conn.execute(
                        sa.select(pparams.c.PARAM_KEY, pparams.c.PARAM_VALUE).where(pparams.c.PART_ID == part_id)
                    )
                }
            )
    return Storage(
        format=detect_format(slib, inf),
        properties=props,
        serde_lib=slib,
        input_format=inf,
        bucket_count=int(nb) if nb is not None else -1,
        source="metastore",
        sort_columns=sort_columns,
    )
