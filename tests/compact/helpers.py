"""Helpers for the compaction tests: fixture tables, merged reads, state checks."""

from __future__ import annotations

import shutil
from pathlib import Path

from acidctl import faults
from acidctl.acid.acidstate import get_acid_state
from acidctl.acid.layout import list_table
from acidctl.acid.read import read_partition
from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.compact.runner import CompactOptions, compact_table
from acidctl.fs import TableFS
from tests.conftest import GOLDEN, REAL

ALL = "9223372036854775807"


def merged(root, snapshot, *, hive_version: int = 3, txns=None) -> dict:
    """{(partition, writeid, bucket, rowid): row values (positional)} of the reader's snapshot."""
    if isinstance(snapshot, str):
        snapshot = WriteIdList.parse(snapshot)
    t = TableFS(str(root))
    out = {}
    for listing in list_table(t):
        state = get_acid_state(listing, snapshot, txns=txns, hive_version=hive_version).require_snapshot()
        for _, tab in read_partition(t, listing, state):
            rows = tab.column("row").combine_chunks()
            vals = (
                list(zip(*[rows.field(i).to_pylist() for i in range(rows.type.num_fields)]))
                if rows.type.num_fields
                else [()] * tab.num_rows
            )
            for o, b, r, v in zip(
                tab.column("originalTransaction").to_pylist(),
                tab.column("bucket").to_pylist(),
                tab.column("rowId").to_pylist(),
                vals,
            ):
                key = (listing.partition, o, b, r)
                assert key not in out
                out[key] = v
    return out


def state_report(root, write_ids: str, *, hive_version: int = 3, txns: str | None = None) -> dict:
    from acidctl.acid.report import build_report
    from acidctl.orc.meta import inspect_file

    return build_report(
        TableFS(str(root)),
        write_ids=WriteIdList.parse(write_ids),
        txns=None if txns is None else TxnList.parse(txns),
        hive_version=hive_version,
        inspect_file=inspect_file,
    )


def state_errors(root, write_ids: str, **kw) -> list[dict]:
    rep = state_report(root, write_ids, **kw)
    return [f for f in rep["findings"] if f["severity"] == "error"]


def compact(root, mode, write_ids, *, spark=None, engine=None, hooks=None, **kw) -> dict:
    wl = WriteIdList.parse(write_ids) if isinstance(write_ids, str) else write_ids
    hv = kw.pop("hive_version", 3)
    txns = kw.pop("txns", None)
    if hv == 4 and txns is None:
        txns = TxnList.all_committed()
    # these helpers check contents; the publication policy (refusing a non-atomic publish by
    # default) has its own tests in test_publish_safety.py
    kw.setdefault("allow_non_atomic_publish", True)
    opts = CompactOptions(
        mode=mode,
        reader=wl,
        txns=txns,
        hive_version=hv,
        engine=engine or ("spark" if spark is not None else "local"),
        **kw,
    )
    # ``hooks``: {step: function} run at the runner's steps (acidctl.faults, tests only)
    with faults.hooks(hooks or {}):
        return compact_table(TableFS(str(root)), opts, spark=spark)


def new_dirs(root: Path, before: set) -> list[Path]:
    return sorted(
        p
        for p in Path(root).rglob("*")
        if p.is_dir() and p not in before and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


# -- fixture tables (layouts as tests/acid/test_merged.py assembles them) ---------------------


def nation_table(dst: Path) -> Path:
    from tests.acidfiles import nation_table as build

    return build(dst)


def copy_real(dst: Path, rel: str, name: str = "t") -> Path:
    t = dst / name
    shutil.copytree(REAL / rel, t)
    return t


def hive23_table(dst: Path) -> Path:
    t = dst / "seed"
    shutil.copytree(GOLDEN / "hive23_seed_table", t, ignore=shutil.ignore_patterns("_EXPECTED.md"))
    return t


def demo_warehouse(dst: Path) -> tuple[Path, dict]:
    """``acidctl demo DIR``'s warehouse and {table: write-id list}."""
    from acidctl.demo import build_demo

    info = build_demo(TableFS(str(dst)), str(dst / "demo"))
    return dst / "demo" / "warehouse", {t["table"].split(".")[-1]: t["write_ids"] for t in info["tables"]}


#: (builder, reader write-id list, columns) for every real fixture table
def fixture_tables(dst: Path) -> list[tuple[str, Path, str, list | None]]:
    return [
        ("nation", nation_table(dst / "a"), f"db.t:4:{ALL}::", None),
        ("nation-open-4", nation_table(dst / "b"), "db.t:4:4:4:", None),
        (
            "trino-nation-originals",
            copy_real(dst / "c", "trino/fullacidNationTableWithOriginalFiles"),
            f"db.t:10000001:{ALL}::",
            None,
        ),
        (
            "qubole-nation-originals",
            copy_real(dst / "d", "prestosql-qubole/fullacidNationTableWithOriginalFiles"),
            f"db.t:10000001:{ALL}::",
            None,
        ),
        ("trino-dummy-id", copy_real(dst / "e", "trino/dummy_id_data_orc"), f"db.t:10000001:{ALL}::", None),
        ("qubole-dummy-id", copy_real(dst / "f", "prestosql-qubole/dummy_id_data_orc"), f"db.t:2:{ALL}::", None),
        ("trino-delete-deltas-only", copy_real(dst / "g", "trino/fullacid_delete_delta_test"), f"db.t:7:{ALL}::", None),
        ("hive23-seed", hive23_table(dst / "h"), f"db.t:2:{ALL}::", ["id", "name", "salary"]),
    ]
