"""build_report runs with the cyclic garbage collector paused and always restores its state."""

import gc

import pytest

import acidctl.acid.report as report_mod
from acidctl.acid.writeids import WriteIdList
from acidctl.errors import AcidctlError
from acidctl.fs import TableFS


def _table(root):
    d = root / "delta_0000001_0000001_0000"
    d.mkdir(parents=True)
    (d / "bucket_00000").write_bytes(b"")
    (d / "_orc_acid_version").write_bytes(b"2")
    return TableFS(str(root))


def _report(tfs):
    return report_mod.build_report(tfs, write_ids=WriteIdList.all_committed(1, "db.t"), txns=None, hive_version=3)


@pytest.fixture
def gc_state():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_gc_paused_while_building_and_restored(tmp_path, monkeypatch, gc_state, enabled):
    seen = []
    real = report_mod.list_table

    def spy(tfs, **kw):
        seen.append(gc.isenabled())
        return real(tfs, **kw)

    monkeypatch.setattr(report_mod, "list_table", spy)
    (gc.enable if enabled else gc.disable)()
    rep = _report(_table(tmp_path / "t"))
    assert rep["partitions"][0]["snapshot"]["read_order"] == ["delta_0000001_0000001_0000"]
    assert seen == [False]
    assert gc.isenabled() is enabled
    with pytest.raises(AcidctlError):  # no table there: the error leaves the collector as it was
        _report(TableFS(str(tmp_path / "missing")))
    assert gc.isenabled() is enabled
