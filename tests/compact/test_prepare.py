"""acidctl.compact.prepare: what one ``compact`` run is, decided from the parsed options and the
resolved target without the CLI (issue 22). Expected values come from the rules the module
implements (Hive's compactorthreshold.* table properties, issue #9's assumed-snapshot rule)."""

from __future__ import annotations

import pytest

from acidctl.compact.prepare import (
    QUIESCENT_NOTE,
    CompactArgs,
    aborted_txn_counts,
    column_names,
    prepare_compaction,
    select_partitions,
)
from acidctl.errors import UsageError
from tests.compact.helpers import nation_table


def _target(tmp_path, **kw):
    from acidctl.cli.main import Settings
    from acidctl.target import resolve_target

    t = nation_table(tmp_path)
    return resolve_target(Settings(output=None), str(t), **kw)


def test_path_target_with_write_ids(tmp_path):
    target = _target(tmp_path, write_ids="default.nation:4:9223372036854775807::")
    run = prepare_compaction(
        target,
        CompactArgs(
            mode="major",
            due=True,
            tblproperty=["compactorthreshold.hive.compactor.delta.num.threshold=20"],
            columns="A, b",
            engine="local",
        ),
    )
    o = run.options
    assert (o.mode, o.due, o.hive_version, o.engine) == ("major", True, 3, "local")
    # compactorthreshold.<key> overrides Hive's default of 10 deltas (directory-state.md, per-table overrides)
    assert o.thresholds.delta_num == 20 and o.thresholds.delta_pct == 0.1
    assert o.aborted_txn_counts is None  # no metastore: unknown, never zero
    assert (o.columns, o.columns_coln_only) == (["A", "b"], False)
    assert o.partitions is None and not o.insert_only and not o.dry_run
    assert run.notes == [] and run.registrar is None and run.mm is None
    assert str(o.reader).startswith("default.nation:4:")


def test_assumed_snapshot_needs_the_quiescence_statement(tmp_path):
    target = _target(tmp_path, assume_committed=True)
    with pytest.raises(UsageError, match="refuses to write on an assumed snapshot"):
        prepare_compaction(target, CompactArgs(mode="minor"))
    run = prepare_compaction(target, CompactArgs(mode="minor", table_is_quiescent=True))
    assert run.notes[0].startswith("ASSUMED: every write id named by a directory (1..4) is committed")
    assert run.notes[-1] == QUIESCENT_NOTE
    report = run.finish({})
    assert report == {"snapshot_source": "--assume-committed", "assumed_quiescent": True}


def test_quiescent_without_assumed_snapshot_is_a_usage_error(tmp_path):
    target = _target(tmp_path, write_ids="default.nation:4:9223372036854775807::")
    with pytest.raises(UsageError, match="only applies with --assume-committed"):
        prepare_compaction(target, CompactArgs(mode="major", table_is_quiescent=True))


def test_bad_tblproperty_is_a_usage_error(tmp_path):
    target = _target(tmp_path, write_ids="default.nation:4:9223372036854775807::")
    with pytest.raises(UsageError, match="--tblproperty expects KEY=VALUE"):
        prepare_compaction(target, CompactArgs(mode="major", tblproperty=["novalue"]))


def test_partition_given_twice_is_refused():
    assert select_partitions(["ds=1"], []) == ["ds=1"]
    assert select_partitions(None, ["ds=2"]) == ["ds=2"]
    with pytest.raises(UsageError, match="not both"):
        select_partitions(["ds=1"], ["ds=2"])


def test_column_names_metastore_names_rename_coln_only():
    class Info:
        columns = [("id", "int"), ("name", "string")]

    assert column_names(None, Info()) == (["id", "name"], True)
    assert column_names("x,y", Info()) == (["x", "y"], False)
    assert column_names(None, None) == (None, False)


def test_aborted_counts_only_for_due_with_a_metastore(tmp_path):
    target = _target(tmp_path, write_ids="default.nation:4:9223372036854775807::")
    assert aborted_txn_counts(target, due=False) is None
    assert aborted_txn_counts(target, due=True) is None  # a path: no metastore to count in
