"""The warehouse at a glance: ``acidctl doctor``, ``why``, ``metrics`` and the HTML report.

* :mod:`acidctl.doctor.facts` — one read-only pass over the metastore (every table, partition,
  txn, lock, queue and history row the rules need) → :class:`~acidctl.doctor.facts.Warehouse`
  (Hive 3/4 and 2.3 databases); :mod:`acidctl.doctor.thrift_facts` — the same from a
  ``thrift://`` metastore, the facts its API lacks named in ``Warehouse.facts_unavailable`` (the
  checks and gauges needing them are skipped and said so);
* :mod:`acidctl.doctor.collect` — the facts plus bounded-parallel directory listings of every
  ACID table and partition → :class:`~acidctl.doctor.collect.Scan`;
* :mod:`acidctl.doctor.findings` — the pure catalogue: a scan in, findings out (each with a
  severity, evidence and the command that fixes it);
* :mod:`acidctl.doctor.why` — replays the Initiator, Worker and Cleaner for one partition;
* :mod:`acidctl.doctor.metrics` — Hive 4's AcidMetricService gauges, computed for Hive 3 too;
* :mod:`acidctl.doctor.html` — one self-contained HTML report (Jinja2 + inlined plotly.js).

Everything here only reads: metastore reads run in read-only transactions, files are listed,
never written (except the HTML file the user asks for).
"""
