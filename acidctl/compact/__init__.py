"""Compaction and cleaning of Hive ACID tables (``acidctl compact``, ``acidctl clean``).

* :mod:`~acidctl.compact.planner` — inputs per partition (compactor snapshot), output names,
  one :class:`~acidctl.compact.planner.BucketTask` per partition × bucket;
* :mod:`~acidctl.compact.task` — the executor function: read, merge (Arrow kernel), write,
  verify one bucket (sources, transform, verification, metrics); crash points in acidctl/faults.py;
* :mod:`~acidctl.compact.spark` — the lazily created SparkSession and the one job;
* :mod:`~acidctl.compact.publish` — staging directories, manifest, rename into place, recovery;
* :mod:`~acidctl.compact.lock` — acidctl's locks per partition (``<table>/.acidctl-compact[.<partition>].lock``);
* :mod:`~acidctl.compact.register` — recording the compaction in a metastore;
* :mod:`~acidctl.compact.runner` — ``compact_table``: the whole sequence;
* :mod:`~acidctl.compact.clean` — what Hive's Cleaner would remove, plus acidctl's leftovers;
* :mod:`~acidctl.compact.hive2` — the bucket task for Hive 2.3 (ACID v1) tables: merged as
  OrcRawRecordMerger, written as CompactorMR.

Nothing here imports pyspark at module level.
"""
