"""Options shared by several commands, declared once (flag, metavar, type, help).

The snapshot options (``--write-ids``, ``--assume-committed``, ``--txns``, ``--hive-version``)
mean the same in every command that reads a table; ``--hive-version`` is one type everywhere
(:data:`HIVE_VERSION`: ``3`` or ``4``, also ``3.1.x`` / ``4.0.x``, ``auto`` = not given;
:data:`READER_HIVE_VERSION` also ``2`` for the commands that read tables), and
repeatable ``KEY=VALUE`` options are parsed by :func:`parse_kv`.

Only typer/click here (imported anyway): ``acidctl --help`` stays fast.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Optional

import click
import typer

from acidctl.keyvalue import parse_kv  # noqa: F401  (re-exported: the commands parse with it)


class HiveVersionType(click.ParamType):
    """``3`` / ``4`` (or a release such as ``3.1.3``, ``4.0.1``) → the int 3 or 4; ``auto`` →
    None (the metastore's version, else 3). ``allowed`` widens it: :data:`READER_HIVE_VERSION`
    also takes ``2`` / ``2.3.x`` (Hive 2.3 ACID v1 rules) for the commands that read tables."""

    def __init__(self, allowed: tuple[int, ...] = (3, 4)):
        self.allowed = allowed
        self.name = "|".join(map(str, allowed))

    def convert(self, value, param, ctx):
        if value is None or isinstance(value, int) and value in self.allowed:
            return value
        text = str(value).strip().lower()
        if text in ("", "auto"):
            return None
        m = re.fullmatch(r"(\d)(?:\.\d+){0,2}", text)
        if not m or int(m.group(1)) not in self.allowed:
            names = {2: "Hive 2.3.x", 3: "Hive 3.1.x", 4: "Hive 4.0.x"}
            self.fail(
                f"{value!r} is not {' or '.join(map(str, self.allowed))} "
                f"({' or '.join(names[v] for v in self.allowed)})",
                param,
                ctx,
            )
        return int(m.group(1))


HIVE_VERSION = HiveVersionType()
#: dump --merged / state / compact / clean: also Hive 2.3 (ACID v1) rules
READER_HIVE_VERSION = HiveVersionType((2, 3, 4))

WRITE_IDS_HELP = (
    "The reader's ValidWriteIdList: db.table:hwm:minOpenWriteId:OPEN:ABORTED, OPEN and ABORTED "
    "comma-separated ids (e.g. db.t:14:12:12:13; 'db.t:14:9223372036854775807::' = all committed "
    "up to 14)."
)
ASSUME_HELP = (
    "Treat every write id named by a directory as committed (no open or aborted ids). "
    "For offline inspection only; the output says so."
)
TXNS_HELP = (
    "Hive 4 ValidTxnList hwm:minOpenTxn:open,...:aborted,... deciding whether _vM directories are "
    "visible (default: every visibility txn committed); with --hive-version 2 the table's snapshot, "
    "Hive 2's hwm:minOpenTxn[:exception]* (e.g. 5:4:3:4)."
)
HIVE_VERSION_HELP = (
    "Hive's rules: 3 (Hive 3.1), 4 (Hive 4.0: _vM visibility, aborted directories) or 2 "
    "(Hive 2.3 ACID v1: txn ids, legacy update events); default: the metastore's version, else 3."
)

PARTITION_METAVAR = "K=V[/K=V]"


# The snapshot options as typer.Option factories: the flag, metavar and type are declared here
# once; a command whose meaning is narrower (compact's compactor list, clean's Cleaner rules)
# passes its own help text. Use as ``Annotated[Optional[str], options.write_ids_option(HELP)]``.
def write_ids_option(help: str = WRITE_IDS_HELP) -> Any:
    return typer.Option("--write-ids", metavar="LIST", help=help)


def assume_committed_option(help: str = ASSUME_HELP) -> Any:
    return typer.Option("--assume-committed", help=help)


def txns_option(help: str = TXNS_HELP) -> Any:
    return typer.Option("--txns", metavar="LIST", help=help)


def hive_version_option(help: str = HIVE_VERSION_HELP) -> Any:
    """``--hive-version`` of the commands that read tables: 2, 3 or 4 (:data:`READER_HIVE_VERSION`)."""
    return typer.Option("--hive-version", metavar="2|3|4", click_type=READER_HIVE_VERSION, help=help)


def partition_option(help: str = "Only this partition (repeatable).") -> Any:
    """``--partition K=V[/K=V]``, repeatable wherever it is accepted (annotate ``list[str]``:
    :data:`Partitions`)."""
    return typer.Option("--partition", metavar=PARTITION_METAVAR, help=help)


MM_FORMAT_HELP = (
    "The table is insert-only and stores files of this format (a path target; DB.TABLE takes it from the metastore)."
)
SERDE_PROPERTY_HELP = (
    "Insert-only text table given as a path: a LazySimpleSerDe property (field.delim, escape.delim, "
    "serialization.null.format, ...), repeatable."
)


TABLE_METAVAR = "PATH|DB.TABLE[/PART]"


def table_argument(help: str) -> Any:
    """The TABLE argument of the commands that take a directory or ``DB.TABLE[/PART]``."""
    return typer.Argument(metavar=TABLE_METAVAR, help=help)


#: how a bare table name is read (every TABLE argument's help says it; cli/targets.py re-exports it)
TABLE_RULE = "A bare NAME[/k=v] means default.NAME when a metastore is configured; an existing path always wins."

#: the TABLE argument of the commands that read a table's snapshot (export, changes, migrate)
SnapshotTable = Annotated[
    str,
    table_argument(
        "Table or partition directory, or DB.TABLE[/k=v] looked up in the metastore (its snapshot too). " + TABLE_RULE
    ),
]


def mm_format_option(help: str = MM_FORMAT_HELP) -> Any:
    """``--format`` of an insert-only table given as a path (DB.TABLE takes it from the metastore)."""
    return typer.Option("--format", metavar="orc|parquet|avro|text", help=help)


def allow_non_atomic_publish_option(help: str) -> Any:
    """``--allow-non-atomic-publish`` of compact and worker (acidctl/compact/publish.py ``safety``)."""
    return typer.Option("--allow-non-atomic-publish", help=help)


def deprecated_option(name: str, *, replaced_by: str) -> Any:
    """A hidden old spelling kept working; the command warns once on stderr (:func:`deprecated`)."""
    return typer.Option(name, hidden=True, help=f"Deprecated: {replaced_by}.")


def deprecated(settings: Any, old: str, new: str) -> None:
    """The one warning of an old option spelling (stderr; JSON on stdout stays clean)."""
    settings.output.note(f"acidctl: warning: {old} is deprecated; use {new}")


def serde_property_option(help: str = SERDE_PROPERTY_HELP) -> Any:
    """``--serde-property KEY=VALUE`` (repeatable with a ``list[str]`` annotation)."""
    return typer.Option("--serde-property", metavar="KEY=VALUE", help=help)


# The Spark options of compact, export and worker: flag and metavar declared once; each command
# keeps its own default and words its help for what its engines are.
MASTER_HELP = "Spark master URL (e.g. local[*], spark://host:7077, yarn) for the Spark engine."
SPARK_CONF_HELP = "Spark configuration for the Spark engine, repeatable (overrides acidctl's defaults)."


#: ``--engine`` of compact, worker, export and upgrade-check: the same choices and default in all
#: (acidctl.compact.engine.ENGINES; kept literal so ``--help`` imports nothing more)
ENGINES = ("auto", "local", "spark")
ENGINE_DEFAULT = "auto"
ENGINE_HELP = (
    "Where the work runs. auto (default): on this machine up to --local-max-bytes of input "
    "($ACIDCTL_LOCAL_MAX_BYTES, else 24 MiB per core), a Spark application above; local: on this "
    "machine (worker processes, one per core); spark: one Spark application (--master)."
)


def engine_option(help: str = ENGINE_HELP) -> Any:
    """``--engine auto|local|spark`` (default :data:`ENGINE_DEFAULT`, any case)."""
    return typer.Option(
        "--engine",
        metavar="|".join(ENGINES),
        click_type=click.Choice(ENGINES, case_sensitive=False),
        help=help,
    )


def master_option(help: str = MASTER_HELP) -> Any:
    return typer.Option("--master", metavar="URL", help=help)


def local_max_bytes_option() -> Any:
    """``--local-max-bytes SIZE``: the input size up to which ``--engine auto`` stays local."""
    return typer.Option(
        "--local-max-bytes",
        metavar="SIZE",
        help="With --engine auto: the input size (e.g. 256M, 2G) up to which the work runs on this machine; default $ACIDCTL_LOCAL_MAX_BYTES, else 24M per core.",
    )


#: ``--dry-run`` of every command that writes: one flag, one meaning (main.PREVIEW_RULE)
DRY_RUN_HELP = "Print what would be done and write nothing (no file, no metastore row); exit as the real run would."


def dry_run_option(help: str = DRY_RUN_HELP) -> Any:
    return typer.Option("--dry-run", help=help)


def execute_option(help: str) -> Any:
    """``--execute`` of the commands that delete or abort (preview unless given; ``--dry-run`` wins)."""
    return typer.Option("--execute", help=help)


def spark_conf_option(help: str = SPARK_CONF_HELP) -> Any:
    """``--spark-conf KEY=VALUE`` (repeatable with a ``list[str]`` annotation; :func:`parse_kv`)."""
    return typer.Option("--spark-conf", metavar="KEY=VALUE", help=help)


Master = Annotated[str, master_option()]
SparkConf = Annotated[Optional[list[str]], spark_conf_option()]
Engine = Annotated[str, engine_option()]
LocalMaxBytes = Annotated[Optional[str], local_max_bytes_option()]
DryRun = Annotated[bool, dry_run_option()]


def mm_allow_originals_option() -> Any:
    """``--mm-allow-originals``: the cluster's ``hive.mm.allow.originals``."""
    return typer.Option(
        "--mm-allow-originals",
        help="Insert-only tables: the cluster runs with hive.mm.allow.originals=true, so while a partition has no base its original files (in the partition directory and its non-ACID subdirectories) are read, as Hive's reader then reads them (default false: they are invisible to Hive, MM01).",
    )


WriteIds = Annotated[Optional[str], write_ids_option()]
MMAllowOriginals = Annotated[bool, mm_allow_originals_option()]
AssumeCommitted = Annotated[bool, assume_committed_option()]
#: the writing commands (compact, clean): an assumed snapshot is for offline use only
AssumeCommittedOffline = Annotated[
    bool,
    assume_committed_option("Treat every write id named by a directory as committed (offline use only)."),
]
Txns = Annotated[Optional[str], txns_option()]
HiveVersion = Annotated[Optional[int], hive_version_option()]
#: metastore commands: the version is detected from the schema unless given
MetastoreHiveVersion = Annotated[
    Optional[int],
    typer.Option(
        "--hive-version",
        metavar="3|4",
        click_type=HIVE_VERSION,
        help="Override the Hive version detected from the schema.",
    ),
]
#: commands that create a metastore schema (a version is always needed)
SchemaHiveVersion = Annotated[
    int,
    typer.Option(
        "--hive-version",
        metavar="3|4",
        click_type=HIVE_VERSION,
        help="Metastore schema to create: 3 (3.1.0) or 4 (4.0.0).",
    ),
]
#: ``--partition`` (repeatable): every command that accepts one accepts several
Partitions = Annotated[Optional[list[str]], partition_option()]


def parse_fs_options(pairs) -> dict[str, Any]:
    """``--fs-option KEY=VALUE`` pairs → fsspec storage options: ``true``/``false`` and
    integers converted (fsspec backends expect typed values), the rest kept as strings."""
    out: dict[str, Any] = {}
    for key, value in parse_kv(pairs, "--fs-option").items():
        low = value.lower()
        if low in ("true", "false"):
            out[key] = low == "true"
        elif value.lstrip("-").isdigit():
            out[key] = int(value)
        else:
            out[key] = value
    return out
