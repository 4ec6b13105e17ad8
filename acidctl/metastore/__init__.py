"""Metastore database access (SQLAlchemy Core): connection and schema detection, SHOW
TRANSACTIONS/LOCKS/COMPACTIONS queries, write-id snapshots, table lookup, and a recorder for
acidctl's own (``metastore init``) databases.

Public API (import from the submodules to keep ``import acidctl.metastore`` free of SQLAlchemy):

* :func:`acidctl.metastore.tables.resolve_table` → :class:`~acidctl.metastore.tables.TableInfo`
* :func:`acidctl.metastore.snapshot.table_snapshot` → ``(TxnList, WriteIdList)``
* :func:`acidctl.metastore.tables.resolve_with_snapshot` → ``(TableInfo, TxnList, WriteIdList)``
* :func:`acidctl.metastore.connection.connect`, :func:`~acidctl.metastore.connection.resolve_url`
* :func:`acidctl.metastore.queries.show_transactions` / ``show_locks`` / ``show_compactions``
* :class:`acidctl.metastore.recorder.Recorder`, :func:`acidctl.metastore.init.init_metastore`
* :mod:`acidctl.metastore.hive2` — Hive 2.3 metastores: ``is_hive2``, ``txn_list``,
  ``show_transactions`` / ``show_compactions``, ``list_tables``, ``table_info``, ``init_hive2``;
  ``Hive2Metastore`` / ``connect_any`` give the queue (:mod:`~acidctl.metastore.queue`) and
  Cleaner (:mod:`~acidctl.metastore.cleaner`) steps a 2.3 schema to write Hive 2.3's protocol to
"""


def resolve_table(engine_or_url, spec, **kw):
    from acidctl.metastore.tables import resolve_table as _f

    return _f(engine_or_url, spec, **kw)


def table_snapshot(engine_or_url, table, **kw):
    from acidctl.metastore.snapshot import table_snapshot as _f

    return _f(engine_or_url, table, **kw)


def resolve_with_snapshot(engine_or_url, spec, **kw):
    from acidctl.metastore.tables import resolve_with_snapshot as _f

    return _f(engine_or_url, spec, **kw)


__all__ = ["resolve_table", "table_snapshot", "resolve_with_snapshot"]
