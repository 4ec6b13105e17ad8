"""acidctl over ``thrift://localhost:9083?auth=kerberos`` against a real Kerberized Hive 2.3.10
metastore (``hive.metastore.sasl.enabled=true``, keytab ``hive/localhost`` from a real MIT KDC;
tests/hive23/kerberized.py), issue #24.

State is planted through the same SASL/GSSAPI transport (acidctl's ThriftMetastore client, with
a ticket of its own) as a Hive 2 client plants it (tests/hive23/plant.py), and acidctl's answers
are compared with the server's own Thrift answers. Each test gets a ticket of its own (``kinit``
from alice's keytab inside the namespace into a per-test cache); without one, or with a wrong
service name, acidctl says so on one line with exit 8.
"""

from __future__ import annotations

import json
import time

import pytest
from hive_metastore.ttypes import AbortTxnsRequest, CommitTxnRequest, LockType, ShowCompactRequest, ShowLocksRequest

from tests.conftest import run_cli
from tests.hive23 import plant
from tests.servers import unavailable
from tests.hive23.test_thrift_hive23 import (
    LOCK_STATES,
    LOCK_TYPES,
    abort_own_open,
    hive2_list,
    history,
    js,
    merged_rows,
    server_txns,
)


@pytest.fixture(scope="session")
def hive23_krb(tmp_path_factory):
    """The Kerberized metastore and its KDC, started lazily by these tests only; skipped with the
    reason when something is missing here (failed instead under ``ACIDCTL_REQUIRE_SERVERS=1``,
    as the plain ``hive23`` fixture is)."""
    from tests.hive23.kerberized import KerberizedHive23, missing

    why = missing()
    if why:
        msg = f"no Kerberized Hive 2.3 metastore here: {why}"
        unavailable(msg)
    server = KerberizedHive23(tmp_path_factory.mktemp("hive23krb"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def khms(hive23_krb, tmp_path_factory):
    """The oracle: a SASL/GSSAPI client of that metastore (its own ticket), in its namespace."""
    cc = str(tmp_path_factory.mktemp("krb-oracle") / "ccache")
    hive23_krb.ticket(cc)
    with hive23_krb.client(cc) as c:
        yield c


@pytest.fixture
def ticket(hive23_krb, tmp_path, monkeypatch):
    """This test's own ticket (kinit -kt inside the namespace) in a per-test cache; this process
    speaks Kerberos in the namespace's realm with it."""
    cc = str(tmp_path / "ccache")
    hive23_krb.ticket(cc)
    for k, v in hive23_krb.env(cc).items():
        monkeypatch.setenv(k, v)
    return cc


def kcli(server, *args, url: str | None = None):
    """acidctl in this process over SASL, its connections made in the namespace."""
    with server.inside():
        return run_cli("--metastore", url or server.url, *args)


def one_line(r) -> bool:
    return r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_the_server_wants_sasl(hive23_krb, khms, ticket):
    from tests.hive23.server import client

    # the premise: this metastore logged in from its keytab (UserGroupInformation's line) ...
    log = (hive23_krb.root / "hive.log").read_text(errors="replace")
    assert "Login successful for user hive/localhost@ACIDCTL.TEST using keytab file" in log
    # ... and authenticates its clients (a plain Thrift client is cut off) ...
    with pytest.raises(Exception):  # noqa: B017 - the server closes the socket: any transport error
        c, transport = client(hive23_krb)
        try:
            c.get_open_txns_info()
        finally:
            transport.close()
    r = kcli(hive23_krb, "show", "transactions", url=hive23_krb.url.split("?")[0])
    assert r.code == 5 and one_line(r) and "add ?auth=kerberos" in r.stderr, r
    # over SASL it answers as the plain 2.3 does (spec §4: getVersion says 3.0, the version
    # comes from what the API offers)
    assert khms.getVersion() == "3.0"
    with hive23_krb.inside():
        from acidctl.metastore import thrift

        assert thrift.connect(hive23_krb.url).hive_version == 2
    assert hive23_krb.started_in < 60


def test_transactions_locks_unlock_abort_over_sasl(hive23_krb, khms, ticket):
    db, t = "ktl_db", "t"
    plant.create_acid_table(khms, db, t, hive23_krb.warehouse, partition_keys=["ds"])
    plant.add_partition(khms, db, t, ["1"])
    (c1,) = plant.open_txns(khms, 1)
    plant.lock(khms, c1, db, t, "ds=1")
    khms.commit_txn(CommitTxnRequest(txnid=c1))
    (a1,) = plant.open_txns(khms, 1)
    khms.abort_txns(AbortTxnsRequest(txn_ids=[a1]))
    (o1,) = plant.open_txns(khms, 1)
    writer = plant.lock(khms, o1, db, t, "ds=1").lockid
    reader = plant.lock(khms, None, db, t, kind=LockType.SHARED_READ).lockid

    # show transactions: the server's open and aborted txns, in id order
    hwm, states = server_txns(khms)
    rep = js(kcli(hive23_krb, "-o", "json", "show", "transactions"))
    assert rep["txn_high_water_mark"] == hwm
    assert [(x["txn_id"], x["state"]) for x in rep["transactions"]] == sorted(states.items())
    mine = {x["txn_id"]: x["state"] for x in rep["transactions"] if x["txn_id"] in (c1, a1, o1)}
    assert mine == {a1: "ABORTED", o1: "OPEN"}  # a committed txn leaves TXNS

    # show locks: as the server lists them
    rep = js(kcli(hive23_krb, "-o", "json", "show", "locks", f"{db}.{t}"))
    got = {
        (x["lock_ext_id"], x["partition"], x["lock_state"], x["lock_type"], x["transaction_id"]) for x in rep["locks"]
    }
    assert got == {(writer, "ds=1", "ACQUIRED", "SHARED_WRITE", o1), (reader, None, "ACQUIRED", "SHARED_READ", None)}
    srv = khms.show_locks(ShowLocksRequest(dbname=db, tablename=t)).locks
    assert got == {(e.lockid, e.partname, LOCK_STATES[e.state], LOCK_TYPES[e.type], e.txnid or None) for e in srv}

    # unlock: a txn's lock is refused as Hive refuses it; a lock without a txn goes
    r = kcli(hive23_krb, "unlock", str(writer), "--execute")
    assert r.code == 6 and "not permitted" in r.stderr and one_line(r), r
    assert js(kcli(hive23_krb, "-o", "json", "unlock", str(reader), "--execute"))["status"] == "unlocked"
    assert reader not in {e.lockid for e in khms.show_locks(ShowLocksRequest()).locks}
    assert writer in {e.lockid for e in khms.show_locks(ShowLocksRequest()).locks}

    # abort transactions: the dry run changes nothing, --execute aborts (Hive drops its locks)
    dry = js(kcli(hive23_krb, "-o", "json", "abort", "transactions", str(o1), str(c1)))
    assert [x["txn_id"] for x in dry["transactions"]] == [o1] and dry["not_open"] == [c1]
    assert server_txns(khms)[1][o1] == "OPEN"
    done = js(kcli(hive23_krb, "-o", "json", "abort", "transactions", str(o1), "--execute"))
    assert done["aborted"] == 1
    assert server_txns(khms)[1][o1] == "ABORTED"
    assert writer not in {e.lockid for e in khms.show_locks(ShowLocksRequest()).locks}


def _compactions(hms, db: str, t: str) -> list:
    return [e for e in hms.show_compact(ShowCompactRequest()).compacts if (e.dbname, e.tablename) == (db, t)]


def test_enqueue_and_show_compactions_over_sasl(hive23_krb, khms, ticket):
    db, t = "kcmp_db", "t"
    plant.create_acid_table(khms, db, t, hive23_krb.warehouse, partition_keys=["ds"])
    plant.add_partition(khms, db, t, ["1"])
    # 2.3's compact2 would queue a partition that does not exist: acidctl checks first
    assert kcli(hive23_krb, "compact", "--enqueue", "--major", f"{db}.{t}/ds=2").code == 3
    doc = js(kcli(hive23_krb, "-o", "json", "compact", "--enqueue", "--major", f"{db}.{t}/ds=1"))
    assert doc["accepted"] and doc["message"] == f"Compaction enqueued with id {doc['id']}"
    (row,) = _compactions(khms, db, t)
    assert (row.id, row.partitionname, row.type, row.state) == (doc["id"], "ds=1", 2, "initiated")  # 2: MAJOR

    # show compactions: the server's queue (no compactor threads run in this JVM); 2.3's
    # SHOW COMPACTIONS has no id column (ShowCompactResponseElement.id is Hive 3's)
    shown = js(kcli(hive23_krb, "-o", "json", "show", "compactions", f"{db}.{t}"))["compactions"]
    assert [
        (c["database"], c["table"], c["partition"], c["type"], c["state"], c["worker"], c["start_ms"]) for c in shown
    ] == [(db, t, "ds=1", "MAJOR", "initiated", row.workerid, row.start)]
    assert row.workerid is None and row.start is None  # 2.3 sets CQ_START when a Worker takes it


def test_the_real_console_script_with_a_ticket(hive23_krb, khms, tmp_path):
    cc = str(tmp_path / "cc-script")
    hive23_krb.ticket(cc)
    p = hive23_krb.acidctl_env(cc, "-o", "json", "show", "transactions")
    assert p.returncode == 0, p.stderr
    hwm, states = server_txns(khms)
    doc = json.loads(p.stdout)
    assert doc["txn_high_water_mark"] == hwm
    assert [(x["txn_id"], x["state"]) for x in doc["transactions"]] == sorted(states.items())


def test_without_a_ticket_is_exit_8_one_line(hive23_krb, khms, tmp_path, monkeypatch):
    for k, v in hive23_krb.env(str(tmp_path / "none")).items():
        monkeypatch.setenv(k, v)
    r = kcli(hive23_krb, "show", "transactions")
    assert r.code == 8 and one_line(r), r
    assert "Kerberos (SASL/GSSAPI, service hive)" in r.stderr, r
    assert f"no Kerberos ticket in FILE:{tmp_path}/none" in r.stderr, r
    # a write is refused the same way, before anything reaches the server
    n = len(khms.show_compact(ShowCompactRequest()).compacts)
    r = kcli(hive23_krb, "compact", "--enqueue", "--major", "default.x")
    assert r.code == 8 and one_line(r), r
    assert len(khms.show_compact(ShowCompactRequest()).compacts) == n
    # the real console script too
    p = hive23_krb.acidctl_env(str(tmp_path / "none"), "show", "locks")
    assert p.returncode == 8 and p.stderr.count("\n") == 1 and "no Kerberos ticket" in p.stderr, p.stderr


def test_wrong_service_name_is_exit_8(hive23_krb, ticket):
    # the KDC has no nothive/localhost: the client's GSSAPI step fails before the server is asked
    r = kcli(hive23_krb, "show", "transactions", url=hive23_krb.url + "&service=nothive")
    assert r.code == 8 and one_line(r), r
    assert "service nothive" in r.stderr, r
    assert "the KDC has no service principal nothive/localhost@ACIDCTL.TEST" in r.stderr, r
    # Kerberos builds the principal from the URL's host: an address has none
    r = kcli(hive23_krb, "show", "transactions", url=hive23_krb.url.replace("localhost", "127.0.0.1"))
    assert r.code == 8 and one_line(r) and "hive/127.0.0.1@ACIDCTL.TEST" in r.stderr, r
    # a service the KDC knows but the metastore has no key for: the server refuses (Hive's
    # TSaslServerTransport: "GSS initiate failed")
    hive23_krb.realm.add_principal("hms2/localhost", keytab=str(hive23_krb.root / "hms2.keytab"))
    r = kcli(hive23_krb, "show", "transactions", url=hive23_krb.url + "&service=hms2")
    assert r.code == 8 and one_line(r), r
    assert "the metastore refused the handshake (GSS initiate failed): its principal is not hms2/localhost" in r.stderr
    # the ticket itself is fine: the same cache works with the right service
    assert kcli(hive23_krb, "show", "transactions").code == 0


def test_an_expired_ticket_is_exit_8(hive23_krb, tmp_path, monkeypatch):
    cc = str(tmp_path / "short")
    hive23_krb.realm.kinit(ccache=cc, lifetime="2s")
    for k, v in hive23_krb.env(cc).items():
        monkeypatch.setenv(k, v)
    time.sleep(3)
    r = kcli(hive23_krb, "show", "compactions")
    assert r.code == 8 and one_line(r), r
    assert f"the Kerberos ticket in FILE:{cc} has expired" in r.stderr, r


def test_snapshot_state_dump_over_sasl(hive23_krb, khms, ticket):
    db, t = "ksnap_db", "t"
    loc = plant.create_acid_table(khms, db, t, hive23_krb.warehouse)
    h = plant.play(khms, history(11, opens=True), db, t, loc)
    try:
        assert "open" in h.states.values()  # the snapshot must hide the open txn
        hwm, states = server_txns(khms)
        expected_list = hive2_list(hwm, states)
        assert js(kcli(hive23_krb, "-o", "json", "show", "write-ids", f"{db}.{t}"))["txns"] == expected_list
        assert merged_rows(kcli(hive23_krb, "dump", "--merged", f"{db}.{t}")) == h.expected(hwm)
        st = kcli(hive23_krb, "state", f"{db}.{t}")
        assert st.code == 0 and expected_list in st.stdout, st
    finally:
        abort_own_open(khms, h)
