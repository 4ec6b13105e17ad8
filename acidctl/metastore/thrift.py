"""The metastore's Thrift API (``--metastore thrift://HOST:PORT[?auth=kerberos&service=NAME]``).

For operators who reach only the metastore's Thrift port (managed metastores, no database
access). The bindings are the ones pyiceberg vendors (top-level ``hive_metastore``, generated
from Hive's current ``hive_metastore.thrift``; the ``thrift`` extra), the transport ``thrift``'s
buffered socket, or SASL/GSSAPI (``TSaslClientTransport`` + ``pure-sasl``, the current ticket
cache) with ``?auth=kerberos``.

What the API offers is what acidctl reads and writes here, behind the same library functions
the database path has (:mod:`~acidctl.metastore.queries`, :mod:`~acidctl.metastore.tables`,
:mod:`~acidctl.metastore.snapshot`, :mod:`~acidctl.metastore.hive2`, ``queue.enqueue_for``,
``admin.unlock``, ``abort transactions``):

* reads: ``get_open_txns_info`` (SHOW TRANSACTIONS, and Hive 2's ValidTxnList: hwm and every
  open/aborted txn ≤ hwm — ``get_open_txns().open_txns`` is None against 2.3, whose IDL sends a
  set where Hive 4's declares a list), ``show_locks``, ``show_compact``, ``get_table`` /
  ``get_partitions`` (table lookup), ``get_valid_write_ids`` (Hive 3/4 snapshots);
* writes: ``compact2`` (``compact --enqueue``; the table is checked first: 2.3's ``compact2``
  accepts a table that does not exist), ``abort_txns``, ``unlock``.

``doctor``, ``why`` and ``metrics`` read what these calls offer
(:mod:`acidctl.doctor.thrift_facts`) and name the checks needing the rest as skipped.

Everything else needs the database (claiming a request as a worker, markCompacted/markCleaned,
the compaction txn ...): a :class:`ThriftMetastore` has no
``tables``/``read()``, so those steps end in :class:`~acidctl.errors.NeedsDatabase` — one line,
its own exit code — before anything is written.

The Hive version comes from what the server answers (``getVersion`` says ``3.0`` on 2.3):
``get_valid_write_ids`` is an "Invalid method name" on 2.x; ``get_open_txns_req`` on 3.x.
``--hive-version`` overrides.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import os
import re
import socket
import time
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

from acidctl.errors import (
    MetastoreError,
    MetastoreUnavailable,
    NeedsDatabase,
    NotFoundError,
    RefusedError,
    TableNotFound,
    UnsupportedSchema,
    UsageError,
)

DEFAULT_PORT = 9083
LONG_MAX = 9223372036854775807
# Hive's state strings of show_compact (2.3 and 3: CompactionInfo/TxnHandler.showCompact)
SHOW_COMPACT_STATES = ("initiated", "working", "ready for cleaning", "failed", "succeeded", "attempted")


def is_thrift(x: Any) -> bool:
    """A ``thrift://`` URL or a :class:`ThriftMetastore`."""
    if isinstance(x, ThriftMetastore):
        return True
    return isinstance(x, str) and x.strip().lower().startswith("thrift://")


@dataclasses.dataclass(frozen=True)
class ThriftUrl:
    host: str
    port: int
    auth: str  # none | kerberos
    service: str
    timeout_s: float

    @classmethod
    def parse(cls, url: str) -> ThriftUrl:
        u = urlsplit(url.strip())
        if u.scheme.lower() != "thrift" or not u.hostname:
            raise UsageError(f"not a Thrift metastore URL: {url!r}", hint="thrift://HOST:PORT[?auth=kerberos]")
        q = {k.lower(): v[-1] for k, v in parse_qs(u.query).items()}
        unknown = set(q) - {"auth", "service", "timeout"}
        if unknown:
            raise UsageError(f"unknown option(s) in the Thrift metastore URL: {', '.join(sorted(unknown))}")
        auth = (q.get("auth") or "none").lower()
        if auth not in ("none", "nosasl", "kerberos", "gssapi"):
            raise UsageError(f"auth={auth} is not supported: give auth=kerberos or leave it out")
        try:
            port = u.port or DEFAULT_PORT
            timeout = float(q.get("timeout", 60))
        except ValueError as e:
            raise UsageError(f"bad Thrift metastore URL {url!r}: {e}") from None
        return cls(
            host=u.hostname,
            port=port,
            auth="kerberos" if auth in ("kerberos", "gssapi") else "none",
            service=q.get("service") or "hive",
            timeout_s=timeout,
        )

    def display(self) -> str:
        extra = f"?auth=kerberos&service={self.service}" if self.auth == "kerberos" else ""
        return f"thrift://{self.host}:{self.port}{extra}"


def _transport(u: ThriftUrl):
    from thrift.transport import TSocket, TTransport

    sock = TSocket.TSocket(u.host, u.port)
    sock.setTimeout(u.timeout_s * 1000)
    if u.auth != "kerberos":
        return TTransport.TBufferedTransport(sock)
    try:
        import kerberos  # noqa: F401  (pure-sasl's GSSAPI mechanism)
        import puresasl  # noqa: F401
    except ImportError:
        from acidctl.errors import MissingExtra
        from acidctl.kerberos import EXTRA_HINT

        raise MissingExtra(
            "auth=kerberos on a Thrift metastore needs the pure-sasl and kerberos packages", hint=EXTRA_HINT
        ) from None
    # the metastore's SASL server: mechanism GSSAPI, service principal SERVICE/HOST (Hive's
    # HadoopThriftAuthBridge; pyiceberg's hive.kerberos-authentication does the same)
    return TTransport.TSaslClientTransport(sock, u.host, u.service, mechanism="GSSAPI")


class ThriftMetastore:
    """A Thrift metastore: one connection, opened lazily, reused by the calls of one command."""

    def __init__(self, url: str, *, hive_version: Any = None):
        self.url = url
        self.parsed = ThriftUrl.parse(url)
        self._client: Any = None
        self._transport: Any = None
        self._hive_version: int | None = _parse_version(hive_version)
        self._answered = False  # has this connection answered a call yet

    # -- connection ------------------------------------------------------------------

    def safe_url(self) -> str:
        return self.parsed.display()

    @property
    def client(self):
        if self._client is None:
            try:
                from hive_metastore.ThriftHiveMetastore import Client
                from thrift.protocol import TBinaryProtocol
            except ImportError:
                from acidctl.errors import MissingExtra

                raise MissingExtra(
                    "a thrift:// metastore needs the Thrift bindings", hint="pip install 'acidctl[thrift]'"
                ) from None
            transport = _transport(self.parsed)
            try:
                transport.open()
            except Exception as e:
                if self.parsed.auth == "kerberos" and not isinstance(e, ConnectionRefusedError):
                    from acidctl.errors import AuthenticationFailed
                    from acidctl.kerberos import KINIT_HINT, gss_reason, ticket_problem

                    raise AuthenticationFailed(
                        f"Kerberos (SASL/GSSAPI, service {self.parsed.service}) to the Thrift metastore at "
                        f"{self.safe_url()} failed: {ticket_problem() or gss_reason(e) or _sasl_refused(self.parsed, e)}",
                        hint=KINIT_HINT + "; the service name is &service=NAME, and the URL must name the "
                        "host of the metastore's principal",
                    ) from None
                raise MetastoreUnavailable(
                    f"cannot reach the Thrift metastore at {self.safe_url()}: {_why(e)}"
                ) from None
            self._transport = transport
            self._client = Client(TBinaryProtocol.TBinaryProtocol(transport))
        return self._client

    def close(self) -> None:
        if self._transport is not None:
            with contextlib.suppress(Exception):
                self._transport.close()
        self._client = self._transport = None

    def call(self, name: str, *args: Any) -> Any:
        """One API call, its failures mapped onto acidctl's errors."""
        from thrift.Thrift import TApplicationException
        from thrift.transport.TTransport import TTransportException

        c = self.client
        try:
            out = getattr(c, name)(*args)
            self._answered = True
            return out
        except TApplicationException as e:
            if e.type == TApplicationException.UNKNOWN_METHOD:
                raise UnsupportedSchema(
                    f"the Thrift metastore at {self.safe_url()} has no {name} (its Hive version lacks it)"
                ) from None
            raise MetastoreError(f"the Thrift metastore failed {name}: {e.message or e}") from None
        except (TTransportException, OSError, socket.timeout) as e:
            first = not self._answered
            self.close()
            hint = None
            if first and self.parsed.auth != "kerberos":
                # a metastore with hive.metastore.sasl.enabled=true closes a plain connection on
                # its first frame (TSaslServerTransport wants a SASL start message)
                hint = "a Kerberized metastore closes plain connections: add ?auth=kerberos to the URL"
            raise MetastoreUnavailable(
                f"lost the Thrift metastore at {self.safe_url()}: {_why(e)}", hint=hint
            ) from None
        except Exception as e:
            cls = type(e).__name__
            msg = getattr(e, "message", None) or str(e)
            if cls == "NoSuchObjectException":
                raise TableNotFound(msg) from None
            if cls in ("NoSuchTxnException", "NoSuchLockException"):
                raise NotFoundError(msg) from None
            if cls in ("TxnAbortedException", "TxnOpenException"):
                raise RefusedError(msg) from None
            if cls in ("MetaException", "InvalidObjectException", "InvalidOperationException"):
                raise MetastoreError(f"the Thrift metastore refused {name}: {msg}") from None
            raise

    # -- version -------------------------------------------------------------------------

    @property
    def hive_version(self) -> int:
        if self._hive_version is None:
            self._hive_version = self._detect()
        return self._hive_version

    def _detect(self) -> int:
        from hive_metastore.ttypes import GetOpenTxnsRequest, GetValidWriteIdsRequest

        def exists(name: str, *args: Any) -> bool:
            try:
                self.call(name, *args)
            except UnsupportedSchema:
                return False
            except (MetastoreError, NotFoundError, TableNotFound, RefusedError):
                pass  # the method exists and refused the probe's arguments
            return True

        # Hive 3 added write ids (get_valid_write_ids); Hive 4 get_open_txns_req
        probe = GetValidWriteIdsRequest(fullTableNames=["acidctl_probe.acidctl_probe"], validTxnList=f"0:{LONG_MAX}::")
        if not exists("get_valid_write_ids", probe):
            return 2
        return 4 if exists("get_open_txns_req", GetOpenTxnsRequest(excludeTxnTypes=[])) else 3

    # -- what only the database offers ---------------------------------------------------

    @property
    def tables(self):
        raise needs_database("this step reads or writes the metastore's tables")

    def t(self, name: str):
        raise needs_database(f"this step reads {name}")

    def read(self):
        raise needs_database("this step reads the metastore's tables")

    @property
    def engine(self):
        raise needs_database("this step reads the metastore's tables")

    @property
    def schema_version(self) -> str | None:
        return None

    read_only = False


def check_writable(what: str) -> None:
    """``--read-only`` (or the profile's ``read_only``) forbids Thrift writes as it forbids SQL ones."""
    from acidctl.metastore import steps

    if steps.writes_forbidden():
        raise steps.MetastoreReadOnly(
            f"refusing to {what}: metastore writes are disabled ({steps._forbidden['why'] or '--read-only'})",
            hint="drop --read-only (or ACIDCTL_READ_ONLY / the profile's read_only key) to allow it",
        )


def needs_database(what: str) -> NeedsDatabase:
    return NeedsDatabase(
        f"not possible over a Thrift metastore: {what} (the Thrift API offers no call for it)"
        if "needs the metastore's database" not in what
        else f"not possible over a Thrift metastore: {what}",
        hint="point --metastore at the metastore's database (postgresql://, mysql://, ...) for this command",
    )


def _sasl_refused(u: ThriftUrl, e: BaseException) -> str:
    """The server's side of a failed handshake: thrift's TSaslTransport answers status 3 (BAD) or
    4 (ERROR) with the server's reason — Hive's TSaslServerTransport says "GSS initiate failed"
    when the ticket is not for its own principal (hive.metastore.kerberos.principal), e.g. a
    service name the KDC knows but the metastore's keytab has no key for."""
    text = _why(e)
    m = re.match(r"Bad SASL negotiation status: (\d+) \((?:b')?(.*?)'?\)$", text)
    if not m:
        return text
    return (
        f"the metastore refused the handshake ({m.group(2)}): its principal is not "
        f"{u.service}/{u.host}, or its keytab is stale"
    )


def _why(e: BaseException) -> str:
    text = str(getattr(e, "message", None) or e) or type(e).__name__
    return text.splitlines()[0]


def _parse_version(v: Any) -> int | None:
    if v in (None, "", "auto"):
        return None
    s = str(v).strip()
    if not s[:1].isdigit():
        return None
    return int(s.split(".")[0])


def connect(url_or_ms: Any, *, hive_version: Any = None) -> ThriftMetastore:
    if isinstance(url_or_ms, ThriftMetastore):
        hv = _parse_version(hive_version)
        if hv is not None and hv != url_or_ms._hive_version:
            url_or_ms._hive_version = hv
        return url_or_ms
    return ThriftMetastore(str(url_or_ms), hive_version=hive_version)


def connect_hive3(url_or_ms: Any, *, hive_version: Any = None) -> ThriftMetastore:
    """What ``connection.connect`` returns for a Thrift URL: a Hive 2 server is refused as the
    database path refuses a 2.x schema (callers then take their Hive 2 path)."""
    ms = connect(url_or_ms, hive_version=hive_version)
    if ms.hive_version == 2:
        raise UnsupportedSchema(f"{ms.safe_url()} is a Hive 2.x metastore")
    return ms


def connect_hive2(url_or_ms: Any, *, require: bool = False) -> ThriftMetastore:
    ms = connect(url_or_ms)
    if require and ms.hive_version != 2:
        raise UsageError(f"this command needs a Hive 2.x metastore; {ms.safe_url()} is Hive {ms.hive_version}")
    return ms


# =========================================================================================
# transactions
# =========================================================================================


def _open_txns_info(ms: ThriftMetastore):
    r = ms.call("get_open_txns_info")
    return int(r.txn_high_water_mark or 0), list(r.open_txns or [])


def _state_code(state: int) -> str:
    from hive_metastore.ttypes import TxnState

    return {TxnState.OPEN: "o", TxnState.ABORTED: "a", TxnState.COMMITTED: "c"}.get(state, "?")


def txn_list(url_or_ms: Any):
    """Hive 2's ValidTxnList (``getOpenTxns``): hwm and every open/aborted TXNS row ≤ hwm."""
    from acidctl.acid.hive2 import from_states

    hwm, rows = _open_txns_info(connect(url_or_ms))
    return from_states(hwm, {int(t.id): _state_code(t.state) for t in rows})


def hive2_show_transactions(url_or_ms: Any) -> dict:
    """The shape of :func:`acidctl.metastore.hive2.show_transactions`."""
    hwm, rows = _open_txns_info(connect(url_or_ms))
    out = [
        {
            "txn_id": int(t.id),
            "state": {"o": "OPEN", "a": "ABORTED"}.get(_state_code(t.state), "COMMITTED"),
            "started_ms": t.startedTime,
            "last_heartbeat_ms": t.lastHeartbeatTime,
            "user": t.user,
            "host": t.hostname,
        }
        for t in sorted(rows, key=lambda t: t.id)
        if int(t.id) <= hwm
    ]
    return {"hive_version": 2, "txn_high_water_mark": hwm, "transactions": out}


def show_transactions(
    url_or_ms: Any,
    *,
    states: Iterable[str] | None = None,
    user: str | None = None,
    min_age_ms: int | None = None,
    limit: int | None = None,
    hive_version: Any = None,
):
    """SHOW TRANSACTIONS on Hive 3/4 over Thrift (``get_open_txns_info``: Hive's own SHOW
    TRANSACTIONS call)."""
    from acidctl.metastore.queries import TxnsReport

    ms = connect_hive3(url_or_ms, hive_version=hive_version)
    hwm, rows = _open_txns_info(ms)
    want = set()
    for s in states or ():
        s2 = s.strip().lower()
        if s2 in ("o", "open"):
            want.add("o")
        elif s2 in ("a", "aborted"):
            want.add("a")
        else:
            raise UsageError(f"unknown transaction state {s!r} (open or aborted)")
    now = int(time.time() * 1000)
    out = []
    for t in sorted(rows, key=lambda t: t.id):
        code = _state_code(t.state)
        if want and code not in want:
            continue
        if user and t.user != user:
            continue
        if min_age_ms is not None and (t.startedTime is None or now - int(t.startedTime) < min_age_ms):
            continue
        out.append(
            {
                "txnid": int(t.id),
                "state": {"o": "OPEN", "a": "ABORTED"}.get(code, "COMMITTED"),
                "startedtime": t.startedTime,
                "lastheartbeattime": t.lastHeartbeatTime,
                "user": t.user,
                "host": t.hostname,
                "agentinfo": t.agentInfo,
                "type": "DEFAULT",
                "heartbeatcount": t.heartbeatCount,
            }
        )
    if limit is not None:
        out = out[:limit]
    return TxnsReport(ms.hive_version, hwm, out)


def abort_transactions(url_or_ms: Any, txn_ids: list[int], *, older_than_ms: int | None, execute: bool) -> dict:
    """``abort transactions`` over Thrift: the listed (and/or old enough) open txns, aborted with
    one ``abort_txns`` call (Hive's ABORT TRANSACTIONS; it also releases their locks)."""
    from hive_metastore.ttypes import AbortTxnsRequest

    ms = connect(url_or_ms)
    _, rows = _open_txns_info(ms)
    now = int(time.time() * 1000)
    by_id = {int(t.id): t for t in rows}
    picked = []
    for t in sorted(rows, key=lambda t: t.id):
        if _state_code(t.state) != "o":
            continue
        if txn_ids and int(t.id) not in txn_ids:
            continue
        if older_than_ms is not None and (t.startedTime is None or now - int(t.startedTime) <= older_than_ms):
            continue
        picked.append(t)
    missing = sorted(i for i in set(txn_ids or ()) if i not in by_id or _state_code(by_id[i].state) != "o")
    aborted = 0
    if execute:
        check_writable("abort transactions")
    if execute and picked:
        ms.call("abort_txns", AbortTxnsRequest(txn_ids=[int(t.id) for t in picked]))
        aborted = len(picked)
    return {
        "dry_run": not execute,
        "older_than_ms": older_than_ms,
        "transactions": [
            {
                "txn_id": int(t.id),
                "state": "open",
                "started": t.startedTime,
                "last_heartbeat": t.lastHeartbeatTime,
                "user": t.user,
                "host": t.hostname,
                "txn_type": None,
                "age_ms": now - int(t.startedTime) if t.startedTime else None,
            }
            for t in picked
        ],
        "not_open": missing,
        "aborted": aborted,
        "locks_of_finished_txns": {},
    }


# =========================================================================================
# locks
# =========================================================================================

#: Thrift's LockState / LockType enum values as SHOW LOCKS names them (the one table of them:
#: acidctl.doctor.thrift_facts derives the HIVE_LOCKS codes from it through queries.LOCK_STATES/TYPES)
LOCK_STATE_NAMES = {1: "ACQUIRED", 2: "WAITING", 3: "ABORT", 4: "NOT_ACQUIRED"}
LOCK_TYPE_NAMES = {1: "SHARED_READ", 2: "SHARED_WRITE", 3: "EXCLUSIVE", 4: "EXCL_WRITE"}


def _lock_elements(ms: ThriftMetastore, *, db=None, table=None, partition=None, txn_id=None) -> list:
    from hive_metastore.ttypes import ShowLocksRequest

    req = ShowLocksRequest(dbname=db, tablename=table, partname=partition if isinstance(partition, str) else None)
    if txn_id is not None and ms.hive_version >= 3:
        req.txnid = txn_id
    r = ms.call("show_locks", req)
    return list(r.locks or [])


def show_locks(
    url_or_ms: Any,
    *,
    db: str | None = None,
    table: str | None = None,
    partition: str | list[str] | None = None,
    txn_id: int | None = None,
    extended: bool = False,
    hive_version: Any = None,
):
    """SHOW LOCKS over Thrift (``show_locks``; every Hive version), in the database path's order
    and shape."""
    from acidctl.metastore.queries import LOCK_TYPE_RANK, LOCK_TYPES, LocksReport

    # SHOW LOCKS order: less restrictive first (the database path's rank, by the type's name)
    type_rank = {LOCK_TYPES[code]: rank for code, rank in LOCK_TYPE_RANK.items()}
    ms = connect(url_or_ms, hive_version=hive_version)
    parts = None if partition is None else ([partition] if isinstance(partition, str) else list(partition))
    els = _lock_elements(ms, db=db.lower() if db else None, table=table.lower() if table else None)
    txn_states: dict[int, tuple[str, Any]] = {}
    if extended:
        _, rows = _open_txns_info(ms)
        txn_states = {
            int(t.id): ({"o": "OPEN", "a": "ABORTED"}.get(_state_code(t.state), "COMMITTED"), t.lastHeartbeatTime)
            for t in rows
        }
    out = []
    for e in els:
        if parts is not None and e.partname not in parts:
            continue
        if txn_id is not None and (e.txnid or 0) != txn_id:
            continue
        intid = e.lockIdInternal if e.lockIdInternal is not None else 1
        d = {
            "lockid": f"{e.lockid}.{intid}",
            "lock_ext_id": int(e.lockid),
            "lock_int_id": int(intid),
            "database": e.dbname,
            "table": e.tablename,
            "partition": e.partname,
            "lock_state": LOCK_STATE_NAMES.get(e.state, str(e.state)),
            "blocked_by": f"{e.blockedByExtId}.{e.blockedByIntId}" if e.blockedByExtId else None,
            "lock_type": LOCK_TYPE_NAMES.get(e.type, str(e.type)),
            "transaction_id": int(e.txnid) if e.txnid else None,
            "last_heartbeat": e.lastheartbeat,
            "acquired_at": e.acquiredat or None,
            "user": e.user,
            "hostname": e.hostname,
            "agent_info": e.agentInfo,
            "heartbeat_count": e.heartbeatCount,
        }
        if extended:
            st = txn_states.get(int(e.txnid or 0))
            d["txn_state"] = st[0] if st else None
            d["txn_last_heartbeat"] = st[1] if st else None
        out.append(d)
    out.sort(
        key=lambda d: (
            0 if d["lock_state"] == "ACQUIRED" else 1,
            type_rank.get(d["lock_type"], 9),
            d["lock_ext_id"],
            d["lock_int_id"],
        )
    )
    return LocksReport(ms.hive_version, out, extended)


def unlock(url_or_ms: Any, lock_id: int, *, execute: bool = False) -> dict:
    """Hive's ``unlock(lockid)`` over Thrift, in :func:`acidctl.metastore.admin.unlock`'s shape:
    a lock of a transaction is refused (exit 6) as the metastore refuses it."""
    from hive_metastore.ttypes import UnlockRequest

    from acidctl.metastore.admin import _refuse_txn_lock

    ms = connect(url_or_ms)
    lock_id = int(lock_id)
    rows = [
        {
            "lockid": f"{e.lockid}.{e.lockIdInternal if e.lockIdInternal is not None else 1}",
            "txnid": int(e.txnid or 0),
            "database": e.dbname,
            "table": e.tablename,
            "partition": e.partname,
            "lock_state": LOCK_STATE_NAMES.get(e.state, str(e.state)),
            "lock_type": LOCK_TYPE_NAMES.get(e.type, str(e.type)),
            "user": e.user,
            "host": e.hostname,
            # TxnHandler.unlock: 2.3 refuses every lock of a txn; 3/4 delete a txn's lock
            # while it is still waiting (hl_txnid = 0 OR hl_lock_state = 'w')
            "deleted": not e.txnid or (ms.hive_version >= 3 and e.state == 2),
        }
        for e in _lock_elements(ms)
        if int(e.lockid) == lock_id
    ]
    if rows and not any(r["deleted"] for r in rows):
        _refuse_txn_lock(lock_id, rows)
    if execute:
        check_writable("unlock")
    if execute and rows:
        ms.call("unlock", UnlockRequest(lockid=lock_id))
    return {
        "lock_id": lock_id,
        "executed": execute,
        "locks": rows,
        "rows_deleted": len(rows) if execute else 0,
        "status": ("unlocked" if execute else "would unlock") if rows else "no such lock",
    }


# =========================================================================================
# compactions
# =========================================================================================


def _compact_elements(ms: ThriftMetastore) -> list:
    from hive_metastore.ttypes import ShowCompactRequest

    return list(ms.call("show_compact", ShowCompactRequest()).compacts or [])


def _ctype(t: Any) -> str:
    return {1: "MINOR", 2: "MAJOR"}.get(t, str(t)) if isinstance(t, int) else str(t)


def hive2_show_compactions(url_or_ms: Any) -> dict:
    """The shape of :func:`acidctl.metastore.hive2.show_compactions` (2.3's ``showCompact``: the
    queue, then the history; ``endTime`` only for finished ones)."""
    ms = connect(url_or_ms)
    rows = []
    for e in _compact_elements(ms):
        end = e.endTime if e.endTime not in (None, -1) else None
        rows.append(
            {
                "database": e.dbname,
                "table": e.tablename,
                "partition": e.partitionname,
                "type": _ctype(e.type),
                "state": e.state,
                "worker": e.workerid,
                "start_ms": e.start,
                "duration_ms": (int(end) - int(e.start)) if end is not None and e.start else None,
                "hadoop_job_id": e.hadoopJobId,
                "highest_txn_id": e.hightestTxnId,
            }
        )
    return {"hive_version": 2, "compactions": rows}


def show_compactions(
    url_or_ms: Any,
    *,
    db: str | None = None,
    table: str | None = None,
    partition: str | list[str] | None = None,
    types: Iterable[str] | None = None,
    states: Iterable[str] | None = None,
    limit: int | None = None,
    hive_version: Any = None,
    **unsupported: Any,
):
    """SHOW COMPACTIONS on Hive 3/4 over Thrift (``show_compact``)."""
    from acidctl.metastore.queries import CompactionsReport

    ms = connect_hive3(url_or_ms, hive_version=hive_version)
    given = [k for k, v in unsupported.items() if v not in (None, False, (), [])]
    if given:
        raise needs_database(f"show compactions {', '.join('--' + k.replace('_', '-') for k in given)}")
    parts = None if partition is None else ([partition] if isinstance(partition, str) else list(partition))
    tset = {x.strip().upper() for x in types or ()}
    sset = {x.strip().lower() for x in states or ()}
    out = []
    for e in _compact_elements(ms):
        if db and (e.dbname or "").lower() != db.lower():
            continue
        if table and (e.tablename or "").lower() != table.lower():
            continue
        if parts is not None and e.partitionname not in parts:
            continue
        if tset and _ctype(e.type) not in tset:
            continue
        if sset and (e.state or "").lower() not in sset:
            continue
        from acidctl.metastore.queries import _split_id

        end = e.endTime if e.endTime not in (None, -1) else None
        start = e.start or None
        worker_host, worker = _split_id(e.workerid)
        init_host, init = _split_id(e.initiatorId)
        out.append(
            {
                "compactionid": e.id,
                "dbname": e.dbname,
                "tabname": e.tablename,
                "partname": e.partitionname,
                "type": _ctype(e.type),
                "state": e.state,
                "worker": e.workerid,
                "workerhost": worker_host,
                "workerid": worker,
                "enqueuetime": e.enqueueTime,
                "starttime": start,
                "endtime": end,
                "duration": (int(end) - int(start)) if start and end else None,
                "hadoopjobid": e.hadoopJobId,
                "errormessage": e.errorMessage,
                "initiatorhost": init_host,
                "initiatorid": init,
                "poolname": "default",
                "txnid": None,
                "nexttxnid": None,
                "committime": None,
                "hightestwriteid": e.hightestTxnId,
                "runas": e.runAs,
            }
        )
    if limit is not None:
        out = out[:limit]
    return CompactionsReport(ms.hive_version, out)


def enqueue_for(url_or_ms: Any, spec: str, *, type: str, pool: str | None = None, dry_run: bool = False) -> dict:
    """``compact --enqueue`` over Thrift: Hive's ``compact2`` after checking the table (and
    partition) exists — 2.3's ``compact2`` accepts a table that does not exist."""
    from hive_metastore.ttypes import CompactionRequest, CompactionType

    ms = connect(url_or_ms)
    info = table_info(ms, spec)
    if info.partitioned and not info.partition:
        raise UsageError(
            f"{info.full_name} is partitioned: give the partition as {info.full_name}/k=v",
            hint="ALTER TABLE ... COMPACT needs the partition of a partitioned table",
        )
    if not info.transactional:
        raise RefusedError(f"{info.full_name} is not a transactional table")
    if pool is not None:
        raise UsageError("--pool is not supported over a Thrift metastore")
    kind = str(type).lower()
    doc = {
        "table": info.full_name,
        "partition": info.partition,
        "type": kind,
        "pool": None,
        "hive_version": ms.hive_version,
        "dry_run": dry_run,
        "existing_id": None,
    }
    if dry_run:
        queued = [
            e
            for e in _compact_elements(ms)
            if (e.dbname or "").lower() == info.db.lower()
            and (e.tablename or "").lower() == info.table.lower()
            and e.partitionname == info.partition
            and e.state in ("initiated", "working")
        ]
        doc.update(id=None, state="initiated", accepted=not queued, message=None)
        if queued:
            doc["message"] = f"a compaction of {info.full_name} is already {queued[0].state}"
        return doc
    check_writable("enqueue a compaction")
    req = CompactionRequest(
        dbname=info.db,
        tablename=info.table,
        partitionname=info.partition,
        type=CompactionType.MAJOR if kind == "major" else CompactionType.MINOR,
        runas=os.environ.get("USER") or None,
    )
    r = ms.call("compact2", req)
    accepted = bool(r.accepted) if r.accepted is not None else True
    msg = r.errormessage if not accepted else None
    if accepted:
        msg = f"Compaction enqueued with id {r.id}"
    elif not msg:
        msg = f"Compaction already enqueued with id {r.id}; State is {r.state}"
    doc.update(id=r.id, state=r.state, accepted=accepted, message=msg)
    if not accepted:
        doc["existing_id"] = r.id
    return doc


# =========================================================================================
# tables
# =========================================================================================


@dataclasses.dataclass
class _Table:
    db: str
    table: str
    location: str | None
    params: dict
    partition_keys: list[tuple[str, str]]
    columns: list[tuple[str, str]]
    bucket_count: int
    input_format: str | None
    output_format: str | None
    table_type: str | None
    owner: str | None


def _get_table(ms: ThriftMetastore, db: str, name: str) -> _Table:
    try:
        t = ms.call("get_table", db.lower(), name.lower())
    except TableNotFound:
        raise TableNotFound(f"table {db}.{name} not found in the metastore") from None
    sd = t.sd
    return _Table(
        db=t.dbName,
        table=t.tableName,
        location=sd.location if sd else None,
        params=dict(t.parameters or {}),
        partition_keys=[(k.name, k.type) for k in (t.partitionKeys or [])],
        columns=[(c.name, c.type) for c in ((sd.cols if sd else None) or [])],
        bucket_count=int(sd.numBuckets) if sd and sd.numBuckets is not None else -1,
        input_format=sd.inputFormat if sd else None,
        output_format=sd.outputFormat if sd else None,
        table_type=t.tableType,
        owner=t.owner,
    )


def _partitions(ms: ThriftMetastore, t: _Table) -> list[tuple[str, str | None]]:
    """(PART_NAME, location) of every partition."""
    if not t.partition_keys:
        return []
    from acidctl.metastore.tables import escape_path_name

    out = []
    for p in ms.call("get_partitions", t.db, t.table, -1) or []:
        name = "/".join(
            f"{escape_path_name(k)}={escape_path_name(v)}"
            for (k, _), v in zip(t.partition_keys, p.values, strict=False)
        )
        out.append((name, p.sd.location if p.sd else None))
    return sorted(out)


def table_info(url_or_ms: Any, spec: str, *, partition: str | None = None):
    """``db.table[/k=v]`` as a :class:`~acidctl.metastore.tables.TableInfo` (``get_table``,
    ``get_partitions``)."""
    from acidctl.metastore.tables import TableInfo, normalize_partition, split_spec

    ms = connect(url_or_ms)
    db, name, part = split_spec(spec)
    if partition:
        if part:
            raise UsageError("give the partition either in DB.TABLE/SPEC or with --partition, not both")
        part = normalize_partition(partition)
    t = _get_table(ms, db, name)
    parts = _partitions(ms, t)
    ploc = None
    if part:
        found = [loc for p, loc in parts if p == part]
        if not found:
            raise NotFoundError(f"partition {part} of {t.db}.{t.table} not found in the metastore")
        ploc = found[0]
    return TableInfo(
        db=t.db,
        table=t.table,
        tbl_id=0,
        table_type=t.table_type,
        owner=t.owner,
        location=t.location,
        input_format=t.input_format,
        output_format=t.output_format,
        bucket_count=t.bucket_count,
        params=t.params,
        partition_keys=list(t.partition_keys),
        # Hive 2.3's CompactorMR names the compacted row struct by the table's columns too
        # (observed on 2.3.10's Worker: row:struct<a:int,b:string> from _col0/_col1 deltas)
        columns=list(t.columns),
        partition=part,
        partition_location=ploc,
        partitions=[p for p, _ in parts],
        hive_version=ms.hive_version,
    )


def find_table(url_or_ms: Any, full_name: str):
    """:func:`acidctl.metastore.hive2.find_table` over Thrift."""
    from acidctl.metastore.hive2 import Hive2Table

    ms = connect(url_or_ms)
    db, _, name = full_name.partition(".")
    t = _get_table(ms, db, name)
    return Hive2Table(t.db, t.table, t.location, t.params, t.partition_keys, _partitions(ms, t), t.columns)


def _databases(ms: ThriftMetastore, db_glob: str) -> list[str]:
    pat = db_glob.lower()
    names = [d for d in ms.call("get_all_databases") or [] if fnmatch.fnmatchcase(d.lower(), pat)]
    if not names and not any(c in pat for c in "*?["):
        raise TableNotFound(f"database {db_glob} not found in the metastore")
    return sorted(names)


def list_tables(url_or_ms: Any, *, db_glob: str = "*", transactional_only: bool = True) -> list:
    """:func:`acidctl.metastore.hive2.list_tables` over Thrift."""
    from acidctl.metastore.hive2 import Hive2Table

    ms = connect(url_or_ms)
    out = []
    for db in _databases(ms, db_glob):
        for name in sorted(ms.call("get_all_tables", db) or []):
            t = _get_table(ms, db, name)
            if transactional_only and (t.params.get("transactional") or "").strip().lower() != "true":
                continue
            out.append(Hive2Table(t.db, t.table, t.location, t.params, t.partition_keys, _partitions(ms, t), t.columns))
    return out


def list_acid_tables(url_or_ms: Any, *, db_glob: str = "*", table_glob: str = "*", hive_version: Any = None) -> list:
    """:func:`acidctl.metastore.tables.list_acid_tables` over Thrift (every Hive version)."""
    ms = connect(url_or_ms, hive_version=hive_version)
    out = []
    for db in _databases(ms, db_glob):
        for name in sorted(ms.call("get_all_tables", db) or []):
            if not fnmatch.fnmatchcase(name.lower(), table_glob.lower()):
                continue
            t = _get_table(ms, db, name)
            p = {k: (v or "").strip().lower() for k, v in t.params.items()}
            if p.get("transactional") != "true":
                continue
            out.append(
                {
                    "table": f"{t.db}.{t.table}",
                    "kind": "insert_only" if p.get("transactional_properties") == "insert_only" else "full",
                    "partition_keys": [k for k, _ in t.partition_keys],
                    "partitions": len(ms.call("get_partition_names", t.db, t.table, -1) or [])
                    if t.partition_keys
                    else 0,
                    "buckets": t.bucket_count if t.bucket_count > 0 else None,
                    "location": t.location,
                }
            )
    return sorted(out, key=lambda r: r["table"])


def require_exists(url_or_ms: Any, db: str, table: str | None = None) -> None:
    ms = connect(url_or_ms)
    if table is not None:
        _get_table(ms, db, table)
    else:
        _databases(ms, db)


# =========================================================================================
# Hive 3/4 snapshots
# =========================================================================================


def table_snapshot(url_or_ms: Any, full_name: str):
    """A fresh reader's (ValidTxnList, ValidWriteIdList) on Hive 3/4: the txn list from
    ``get_open_txns_info`` (hwm; open and aborted ids), the table's write ids from
    ``get_valid_write_ids`` with that list — what HiveTxnManager does."""
    from hive_metastore.ttypes import GetValidWriteIdsRequest

    from acidctl.acid.writeids import TxnList, WriteIdList

    ms = connect_hive3(url_or_ms)
    hwm, rows = _open_txns_info(ms)
    opens = sorted(int(t.id) for t in rows if _state_code(t.state) == "o" and int(t.id) <= hwm)
    aborted = sorted(int(t.id) for t in rows if _state_code(t.state) == "a" and int(t.id) <= hwm)
    tl = TxnList(hwm=hwm, open=tuple(opens), aborted=tuple(aborted))
    r = ms.call(
        "get_valid_write_ids", GetValidWriteIdsRequest(fullTableNames=[full_name.lower()], validTxnList=str(tl))
    )
    tv = (r.tblValidWriteIds or [None])[0]
    if tv is None:
        raise TableNotFound(f"no write ids for {full_name} from the metastore")
    bits = tv.abortedBits or b""
    inv = list(tv.invalidWriteIds or [])
    ab = {w for i, w in enumerate(inv) if i // 8 < len(bits) and bits[i // 8] >> (i % 8) & 1}
    wl = WriteIdList(
        table=tv.fullTableName,
        hwm=int(tv.writeIdHighWaterMark),
        open=tuple(w for w in inv if w not in ab),
        aborted=tuple(sorted(ab)),
    )
    return tl, wl


@contextlib.contextmanager
def closing(ms: Any) -> Iterator[Any]:
    try:
        yield ms
    finally:
        if isinstance(ms, ThriftMetastore):
            ms.close()
