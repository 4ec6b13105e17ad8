"""Insert-only (micro-managed, MM) tables: plain data files in base/delta directories
(../shared/spec/insert-only-and-hive2.md Part A).

* :mod:`acidctl.mm.context` — is a target insert-only, and with which format and columns;
* :mod:`acidctl.mm.read` — the files a Hive reader reads and their rows (``dump --merged``);
* :mod:`acidctl.mm.plain` — ``dump FILE`` for non-ORC data files;
* :mod:`acidctl.mm.checks` — ``state`` checks MM01-MM08 for MM tables;
* :mod:`acidctl.mm.coverage` — what an MM compaction reads (``clean``'s re-verification);
* :mod:`acidctl.mm.compact` — major (and Hive 4 minor) compaction of MM tables.
"""
