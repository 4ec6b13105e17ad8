"""acidctl on WebHDFS behind real SPNEGO: apache2 + mod_auth_gssapi (tests/kerberos/realm.py)
in front of the WebHDFS test server, tickets from a throwaway MIT KDC.

What a secured cluster does and these tests check (Hadoop's WebHDFS REST API, "Authentication"
and "Delegation Token Operations"): a client authenticates to the NameNode with SPNEGO or
passes ``delegation=TOKEN``; a token is fetched with GETDELEGATIONTOKEN by a Kerberos-
authenticated caller, renewed with RENEWDELEGATIONTOKEN and cancelled with
CANCELDELEGATIONTOKEN; the NameNode's redirect to a DataNode carries a token."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest

from acidctl.errors import ExitCode
from tests.acidfiles import nation_table

ALL = "9223372036854775807"
WL = f"db.t:4:{ALL}::"
ALICE = "alice@ACIDCTL.TEST"


def _table(hdfs, *, partitions: tuple[str, ...] = ()) -> str:
    """The nation table (fixtures/real/README.md §1) in a fresh directory of the secured HDFS,
    once per partition when ``partitions`` are given; its hdfs path."""
    name = "t" + uuid.uuid4().hex[:8]
    root = os.path.join(hdfs.local("/warehouse"), name)
    if not partitions:
        nation_table(Path(hdfs.local("/warehouse")), markers=True, name=name)
    for p in partitions:
        src = nation_table(Path(root), markers=True, name=p)
        assert src.exists()
    return f"/warehouse/{name}"


def _merged(cli, *args) -> list[dict]:
    r = cli("-o", "json", *args)
    assert r.code == 0, r
    return [json.loads(x) for x in r.stdout.splitlines()]


KRB = ("--fs-option", "kerberos=true")


def test_state_and_merged_read_over_spnego(cli, spnego_hdfs, kerberos_env):
    path = _table(spnego_hdfs)
    r = cli(*KRB, "-o", "json", "state", "--write-ids", WL, spnego_hdfs.url(path))
    assert r.code == 0, r
    roles = {e["name"]: e["role"] for p in json.loads(r.stdout)["partitions"] for e in p["entries"]}
    assert roles == {
        "delta_0000002_0000002_0000": "delta",
        "delete_delta_0000003_0000003_0000": "delete delta",
        "delete_delta_0000004_0000004_0000": "delete delta",
    }
    rows = _merged(cli, *KRB, "dump", "--merged", "--write-ids", WL, spnego_hdfs.url(path))
    # fixtures/real/README.md §1: 25 nation keys × 1000 rows, keys 5 and 19 deleted by write ids 3, 4
    assert len(rows) == 23000 and {x["n_nationkey"] for x in rows} == set(range(25)) - {5, 19}
    creds = spnego_hdfs.server.credentials
    assert creds and {c[4] for c in creds} == {ALICE}  # every NameNode call authenticated by SPNEGO
    assert spnego_hdfs.server.ops["GETDELEGATIONTOKEN"] == 0  # one process: no token needed


def test_no_ticket_is_one_line_with_its_own_exit_code(cli, spnego_hdfs, kerberos_env, monkeypatch, tmp_path):
    path = _table(spnego_hdfs)
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path}/no-such-ccache")
    r = cli(*KRB, "state", "--write-ids", WL, spnego_hdfs.url(path))
    host = f"localhost:{spnego_hdfs.proxy.port}"
    assert r.code == ExitCode.AUTH == 8, r
    assert "Traceback" not in r.stderr and "bug" not in r.stderr
    assert f"authentication to {host} failed: no Kerberos ticket" in r.stderr, r.stderr
    assert "kinit" in r.stderr and not r.stdout


def test_expired_ticket_is_named(cli, spnego_hdfs, kerberos_env, monkeypatch, tmp_path):
    path = _table(spnego_hdfs)
    cc = kerberos_env.kinit(ccache=str(tmp_path / "short"), lifetime="1s")
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{cc}")
    time.sleep(2.1)
    r = cli(*KRB, "dump", "--merged", "--write-ids", WL, spnego_hdfs.url(path))
    assert r.code == ExitCode.AUTH, r
    assert "has expired" in r.stderr and "kinit" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_ip_address_url_gets_the_host_name_hint(cli, spnego_hdfs, kerberos_env):
    """SPNEGO asks for the service principal HTTP/<host in the URL>: the KDC has HTTP/localhost,
    nothing for 127.0.0.1 (krb5.conf: dns_canonicalize_hostname = false, rdns = false)."""
    path = _table(spnego_hdfs)
    r = cli(*KRB, "state", "--write-ids", WL, spnego_hdfs.url(path).replace("//localhost:", "//127.0.0.1:"))
    assert r.code == ExitCode.AUTH, r
    assert "not 127.0.0.1" in r.stderr and "service principal" in r.stderr, r.stderr


def test_no_kerberos_option_on_a_secured_cluster(cli, spnego_hdfs, kerberos_env):
    path = _table(spnego_hdfs)
    r = cli("state", "--write-ids", WL, spnego_hdfs.url(path))
    assert r.code == ExitCode.AUTH, r
    assert "requires authentication" in r.stderr and "kerberos=true" in r.stderr, r.stderr


def test_missing_extra_names_the_kerberos_extra(cli, spnego_hdfs, kerberos_env, monkeypatch):
    import sys

    # requests_kerberos not importable (the kerberos extra not installed)
    monkeypatch.setitem(sys.modules, "requests_kerberos", None)
    import fsspec

    fsspec.filesystem("webhdfs", host="localhost", port=1, skip_instance_cache=True)  # fsspec loaded
    r = cli("--fs-option", "kerberos=true", "--fs-option", "port=1", "state", "hdfs://localhost:1/x")
    assert r.code == ExitCode.MISSING_EXTRA == 9, r
    assert "requests-kerberos" in r.stderr and "acidctl[kerberos]" in r.stderr and "libkrb5-dev" in r.stderr
    assert "Traceback" not in r.stderr


def test_compaction_workers_use_a_delegation_token_not_spnego(cli, spnego_hdfs, kerberos_env, monkeypatch):
    """Two partitions, two local worker processes: the driver lists and plans with SPNEGO,
    fetches ONE delegation token (and renews it once to learn its expiry), the workers read and
    write with ``delegation=`` alone (apache2's bypass: no Kerberos in them), the token is
    cancelled when the command ends, and the result reads as before."""
    monkeypatch.setenv("ACIDCTL_LOCAL_POOL_MIN_BYTES", "0")  # a worker pool even for small inputs
    path = _table(spnego_hdfs, partitions=("ds=1", "ds=2"))
    url = spnego_hdfs.url(path)
    before = sorted(map(json.dumps, _merged(cli, *KRB, "dump", "--merged", "--write-ids", WL, url)))
    assert len(before) == 2 * 23000
    srv = spnego_hdfs.server
    srv.credentials.clear()
    r = cli(*KRB, "-o", "json", "compact", "--major", "--engine", "local", "--write-ids", WL, url)
    assert r.code == 0, r
    report = json.loads(r.stdout)
    assert [p["output_dirs"] for p in report["partitions"]] == [["base_0000004"], ["base_0000004"]]
    assert report["engine_choice"]["workers"] == 2  # two worker processes, not this one
    assert srv.ops["GETDELEGATIONTOKEN"] == 1
    assert len(srv.tokens) >= 1
    issued = [t for t, v in srv.tokens.items() if v["renewals"] >= 1]
    assert len(issued) == 1, srv.tokens  # the one the driver fetched (redirect tokens are never renewed)
    token = issued[0]
    assert srv.tokens[token]["cancelled"] and srv.tokens[token]["owner"] == "alice"
    with_token = [c for c in srv.credentials if c[2] == token]
    # the workers: every call on the token alone, never SPNEGO; reads and writes among them
    assert with_token and all(c[4] is None for c in with_token)
    assert {"OPEN", "CREATE"} <= {c[0] for c in with_token}
    # the driver: everything else authenticated by SPNEGO as alice
    assert all(c[4] == ALICE for c in srv.credentials if c[2] is None)
    after = sorted(map(json.dumps, _merged(cli, *KRB, "dump", "--merged", "--write-ids", WL, url)))
    assert after == before
    # a cancelled token is refused with one line (exit 8), as a worker would see it
    r = cli("--fs-option", f"token={token}", "state", "--write-ids", WL, url)
    assert r.code == ExitCode.AUTH and "rejected the delegation token" in r.stderr, r
    assert token not in r.stderr


def test_proxy_user_passes_through_and_owns_the_token(cli, spnego_hdfs, kerberos_env, monkeypatch):
    from acidctl.fs import TableFS, release_delegation_tokens, worker_options

    path = _table(spnego_hdfs)
    r = cli(*KRB, "--fs-option", "proxy_to=etl", "-o", "json", "state", "--write-ids", WL, spnego_hdfs.url(path))
    assert r.code == 0, r
    srv = spnego_hdfs.server
    assert srv.credentials and {(c[3], c[4]) for c in srv.credentials} == {("etl", ALICE)}
    srv.credentials.clear()
    tfs = TableFS(spnego_hdfs.url(path), {"kerberos": True, "proxy_to": "etl"})
    assert [e.name for e in tfs.ls(tfs.root)][0] == "delete_delta_0000003_0000003_0000"
    opts = worker_options(tfs)
    assert set(opts) == {"token"}  # the token carries the proxied user: no kerberos, no doas
    assert srv.tokens[opts["token"]]["owner"] == "etl"
    # every NameNode call of the driver: authenticated as alice, acting as etl
    assert {(c[3], c[4]) for c in srv.credentials} == {("etl", ALICE)}
    assert worker_options(tfs) == opts  # fetched once
    assert srv.ops["GETDELEGATIONTOKEN"] == 1
    release_delegation_tokens()
    assert srv.tokens[opts["token"]]["cancelled"]


def test_token_is_renewed_before_it_expires(spnego_hdfs, kerberos_env):
    from acidctl.fs import TableFS, release_delegation_tokens, worker_options

    spnego_hdfs.server.token_renew_interval = 0.6
    tfs = TableFS(spnego_hdfs.url("/"), {"kerberos": True})
    token = worker_options(tfs)["token"]
    try:
        time.sleep(1.5)  # > 2 intervals: without renewals at 90% of the remaining life it would expire
        t = spnego_hdfs.server.tokens[token]
        assert t["renewals"] >= 3 and t["expires"] > time.time()
        assert TableFS(spnego_hdfs.url("/"), {"token": token}).ls("/")  # still accepted
    finally:
        release_delegation_tokens()
    assert spnego_hdfs.server.tokens[token]["cancelled"]


def test_a_401_on_the_datanode_redirect_is_an_error_not_data(cli, spnego_hdfs, kerberos_env, tmp_path):
    """fsspec returns a DataNode read's body without checking its status: a NameNode redirect
    without a token sends the read to a DataNode that wants SPNEGO or a token (here apache2
    answers 401 with an HTML page); that must end the command, not be read as file bytes."""
    path = _table(spnego_hdfs)
    from acidctl.fs import TableFS, release_delegation_tokens, worker_options

    tfs = TableFS(spnego_hdfs.url(path), {"kerberos": True})
    token = worker_options(tfs)["token"]
    try:
        spnego_hdfs.server.redirect_delegation = False
        r = cli(
            "--fs-option", f"token={token}", "dump", spnego_hdfs.url(path + "/delta_0000002_0000002_0000/bucket_00000")
        )
        assert r.code == ExitCode.AUTH, r
        assert "HTTP 401" in r.stderr and "/datanode" in r.stderr and token not in r.stderr, r.stderr
        assert not r.stdout
        # the same through the merged reader (Arrow reads the file through fsspec); the command
        # above cancelled the tokens of this process when it ended: a new one
        token = worker_options(tfs)["token"]
        r = cli("--fs-option", f"token={token}", "dump", "--merged", "--write-ids", WL, spnego_hdfs.url(path))
        assert r.code == ExitCode.AUTH and "HTTP 401" in r.stderr and not r.stdout, r
    finally:
        release_delegation_tokens()


@pytest.mark.parametrize("status", [403, 500])
def test_datanode_error_status_is_an_error(cli, spnego_hdfs, kerberos_env, monkeypatch, status):
    from tests import webhdfs_server

    path = _table(spnego_hdfs)
    orig = webhdfs_server._Handler.do_GET

    def failing(self):
        if self.path.startswith("/datanode"):
            return self._error(status, "IOException", "DataNode says no")
        return orig(self)

    monkeypatch.setattr(webhdfs_server._Handler, "do_GET", failing)
    r = cli(*KRB, "dump", spnego_hdfs.url(path + "/delta_0000002_0000002_0000/bucket_00000"))
    assert r.code == ExitCode.UNAVAILABLE, r
    assert f"answered HTTP {status}: DataNode says no" in r.stderr and not r.stdout, r.stderr


def test_no_token_from_the_namenode_leaves_the_login_to_the_workers(tmp_path, kerberos_env):
    """A NameNode that issues no token to this caller (here: no SPNEGO in front, so the
    WebHDFS server refuses GETDELEGATIONTOKEN as Hadoop does without Kerberos authentication):
    the other processes get the driver's own options, as before."""
    from acidctl.fs import TableFS, worker_options
    from tests.webhdfs_server import WebHDFS

    (tmp_path / "hdfs").mkdir()
    with WebHDFS(str(tmp_path / "hdfs")) as server:
        tfs = TableFS(server.url("/"), {"kerberos": True})
        assert worker_options(tfs) == {"kerberos": True}
        assert server.ops["GETDELEGATIONTOKEN"] == 1 and not server.tokens


def test_missing_path_over_spnego_is_exit_3(cli, spnego_hdfs, kerberos_env):
    r = cli(*KRB, "state", "--write-ids", WL, spnego_hdfs.url("/warehouse/no-such-table"))
    assert r.code == ExitCode.NOT_FOUND and "no such file" in r.stderr, r
