"""Spark on a Kerberized cluster: Spark's own login (``spark.kerberos.principal`` /
``spark.kerberos.keytab``, Spark's "Running on a Kerberized cluster" settings; ``spark-submit
--principal/--keytab`` set the same keys) reaches the session acidctl builds, and what a Spark
task closure carries of a Kerberized WebHDFS table is a delegation token, not the driver's
login (Spark pickles the closure with cloudpickle, which honours ``__getstate__``)."""

from __future__ import annotations

import pickle

import pytest

from acidctl.errors import ExitCode
from tests.acidfiles import nation_table

ALL = "9223372036854775807"


def test_spark_kerberos_settings_reach_the_session(cli, tmp_path, monkeypatch):
    from acidctl.compact import spark

    seen = {}

    def fake_session(master="local[*]", conf=None):
        seen["conf"] = spark.session_conf(master, conf)
        raise spark.SparkUnavailable("stopped by the test before starting a JVM")

    monkeypatch.setattr(spark, "get_or_create_session", fake_session)
    t = nation_table(tmp_path, markers=True)
    r = cli(
        "compact",
        "--major",
        "--engine",
        "spark",
        "--master",
        "local[1]",
        "--spark-conf",
        "spark.kerberos.principal=alice@ACIDCTL.TEST",
        "--spark-conf",
        "spark.kerberos.keytab=/etc/security/keytabs/alice.keytab",
        "--write-ids",
        f"db.t:4:{ALL}::",
        t,
    )
    assert r.code == ExitCode.UNAVAILABLE and "stopped by the test" in r.stderr, r
    conf = seen["conf"]
    assert conf["spark.kerberos.principal"] == "alice@ACIDCTL.TEST"
    assert conf["spark.kerberos.keytab"] == "/etc/security/keytabs/alice.keytab"
    assert conf["spark.master"] == "local[1]"


def test_spark_closure_carries_a_delegation_token(spnego_hdfs, kerberos_env):
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")
    from acidctl.fs import TableFS, release_delegation_tokens

    tfs = TableFS(spnego_hdfs.url("/"), {"kerberos": True, "port": spnego_hdfs.proxy.port})
    try:
        blob = cloudpickle.dumps(lambda: tfs.root)  # a task closure over the table's filesystem
        shipped = pickle.loads(blob).__closure__[0].cell_contents
        token = shipped.options["token"]
        assert "kerberos" not in shipped.options and shipped.options["port"] == spnego_hdfs.proxy.port
        assert spnego_hdfs.server.tokens[token]["owner"] == "alice"
        spnego_hdfs.server.credentials.clear()
        assert shipped.ls("/") is not None  # the executor side: the token alone
        assert {(c[2], c[4]) for c in spnego_hdfs.server.credentials} == {(token, None)}
    finally:
        release_delegation_tokens()
    assert spnego_hdfs.server.tokens[token]["cancelled"]


@pytest.mark.spark
@pytest.mark.slow
def test_spark_executors_read_and_write_with_the_token(cli, spnego_hdfs, kerberos_env):
    """A real compaction on Spark (local[2]: executors are Python workers of the JVM): every
    NameNode call of a task carries the driver's one delegation token and no SPNEGO login; the
    token is cancelled when the command ends; the result reads as before."""
    pytest.importorskip("pyspark")
    from tests.kerberos.test_webhdfs_spnego import ALICE, KRB, WL, _merged, _table

    path = _table(spnego_hdfs, partitions=("ds=1", "ds=2"))
    url = spnego_hdfs.url(path)
    before = sorted(map(repr, _merged(cli, *KRB, "dump", "--merged", "--write-ids", WL, url)))
    srv = spnego_hdfs.server
    srv.credentials.clear()
    r = cli(
        *KRB, "-o", "json", "compact", "--major", "--engine", "spark", "--master", "local[2]", "--write-ids", WL, url
    )
    assert r.code == 0, r
    assert srv.ops["GETDELEGATIONTOKEN"] == 1
    (token,) = [t for t, v in srv.tokens.items() if v["renewals"] >= 1]
    assert srv.tokens[token]["cancelled"]
    with_token = [c for c in srv.credentials if c[2] == token]
    assert with_token and all(c[4] is None for c in with_token)
    assert {"OPEN", "CREATE"} <= {c[0] for c in with_token}
    assert all(c[4] == ALICE for c in srv.credentials if c[2] is None)
    assert sorted(map(repr, _merged(cli, *KRB, "dump", "--merged", "--write-ids", WL, url))) == before
