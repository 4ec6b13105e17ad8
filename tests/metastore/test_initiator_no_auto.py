"""``no_auto_compaction`` on the database (operations.md §4.3 row 7, HIVE-26793): Hive 4's
Initiator reads the database property first and lets it decide whenever it is present
(``MetaStoreUtils.isNoAutoCompactSet``): ``true`` skips every table of the database, ``false``
overrides ``true`` on a table. Hive 3 reads the table property only."""

from __future__ import annotations

import sqlalchemy as sa

from acidctl.acid.initiator import no_auto_compaction
from acidctl.metastore.connection import connect
from tests.metastore.helpers import cli_json, make_table


def test_the_rule_without_a_metastore():
    # Hive 3: the table alone; the lower-case key first, then the upper-case one
    assert no_auto_compaction({"NO_AUTO_COMPACTION": "TRUE"}, {"no_auto_compaction": "false"}, hive_version=3) == (
        True,
        "table",
    )
    assert no_auto_compaction({"no_auto_compaction": "false", "NO_AUTO_COMPACTION": "true"}, None) == (False, "table")
    # Boolean.parseBoolean: "true" in any case, nothing else (no trimming)
    assert no_auto_compaction({"no_auto_compaction": " true"}, None) == (False, "table")
    assert no_auto_compaction({}, {}, hive_version=4) == (False, None)
    # Hive 4: a database value decides when present, either way
    assert no_auto_compaction({"no_auto_compaction": "true"}, {"no_auto_compaction": "false"}, hive_version=4) == (
        False,
        "database",
    )
    assert no_auto_compaction({}, {"NO_AUTO_COMPACTION": "True"}, hive_version=4) == (True, "database")
    assert no_auto_compaction({"no_auto_compaction": "true"}, {"other": "x"}, hive_version=4) == (True, "table")


def _set(url: str, db: str, *, db_value: str | None, table_params: dict[str, dict[str, str]]) -> None:
    ms = connect(url)
    T = ms.tables
    eng = sa.create_engine(url)
    with eng.begin() as c:
        db_id = c.execute(sa.select(T.DBS.DB_ID).where(T.DBS.NAME == db)).scalar()
        ids = dict(c.execute(sa.select(T.TBLS.TBL_NAME, T.TBLS.TBL_ID).where(T.TBLS.DB_ID == db_id)).all())
        dp = T.DATABASE_PARAMS
        c.execute(sa.delete(dp.clause).where(dp.DB_ID == db_id))
        if db_value is not None:
            c.execute(
                sa.insert(dp.clause).values(
                    {dp.DB_ID.name: db_id, dp.PARAM_KEY.name: "no_auto_compaction", dp.PARAM_VALUE.name: db_value}
                )
            )
        tp = T.TABLE_PARAMS
        for name, params in table_params.items():
            for k, v in params.items():
                c.execute(
                    sa.insert(tp.clause).values(
                        {tp.TBL_ID.name: ids[name], tp.PARAM_KEY.name: k, tp.PARAM_VALUE.name: v}
                    )
                )
    eng.dispose()


def test_initiator_once_honours_the_database_property(metastore, hive_version, tmp_path, capsys):
    url, rec = metastore
    wh = tmp_path / "wh"
    for name in ("plain", "optout"):
        make_table(rec, wh, "nac", name)
    due = {"compactorthreshold.hive.compactor.delta.num.threshold": "1"}
    _set(
        url,
        "nac",
        db_value="false",
        table_params={"plain": due, "optout": {**due, "no_auto_compaction": "true"}},
    )
    argv = ["--metastore", url, "initiator", "--once", "--db", "nac", "--dry-run"]
    acts = {c["table"]: (c["action"], c["reasons"]) for c in cli_json(capsys, argv)["checked"]}
    assert acts["nac.plain"][0] == "would-enqueue"
    if hive_version >= 4:  # database false decides over the table's true
        assert acts["nac.optout"][0] == "would-enqueue"
    else:  # Hive 3 never reads the database property
        assert acts["nac.optout"] == ("skipped", ["no_auto_compaction=true"])

    _set(url, "nac", db_value="TRUE", table_params={})
    acts = {c["table"]: (c["action"], c["reasons"]) for c in cli_json(capsys, argv)["checked"]}
    if hive_version >= 4:
        assert acts == {
            "nac.plain": ("skipped", ["no_auto_compaction=true on database nac"]),
            "nac.optout": ("skipped", ["no_auto_compaction=true on database nac"]),
        }
    else:
        assert acts["nac.plain"][0] == "would-enqueue" and acts["nac.optout"][0] == "skipped"

    # why explains the same decision
    [part] = cli_json(capsys, ["--metastore", url, "why", "nac.plain"])["partitions"]
    step = next(s for s in part["initiator"]["steps"] if s["rule"] == "no_auto_compaction")
    if hive_version >= 4:
        assert step["outcome"] == "stop" and "database nac" in step["detail"]
    else:
        assert step["outcome"] == "ok"

    # doctor: the due compaction of a database that opts out is an INITIATOR_SKIPS_NO_AUTO
    # warning on Hive 4 (a plain COMPACTION_DUE on Hive 3, where the database value is ignored)
    capsys.readouterr()
    from tests.metastore.helpers import run_cli

    run_cli(["-o", "json", "--metastore", url, "doctor", "--db", "nac"])
    import json

    codes = {(f["code"], f["table"]): f for f in json.loads(capsys.readouterr().out)["findings"]}
    if hive_version >= 4:
        f = codes[("INITIATOR_SKIPS_NO_AUTO", "nac.plain")]
        assert "database nac sets no_auto_compaction=true" in f["message"]
    else:
        assert ("COMPACTION_DUE", "nac.plain") in codes and ("INITIATOR_SKIPS_NO_AUTO", "nac.plain") not in codes
