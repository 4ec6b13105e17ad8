"""``acidctl migrate``: a Hive ACID table's snapshot into Apache Iceberg or Delta Lake, kept in
sync by write id (issue #23).

* :mod:`backend`: the protocol a target format implements (:class:`~backend.Backend`);
* :mod:`types`: Hive → Arrow types of the target schema;
* :mod:`digest`: order-independent per-partition digests (verification);
* :mod:`source`: the source table's snapshot, streamed per partition × bucket;
* :mod:`plan`, :mod:`run`: what a run changes (first load or catch-up) and the run itself;
* :mod:`iceberg`: the Iceberg target (pyiceberg); ``delta``: the Delta target (deltalake).

Nothing here is imported by ``acidctl --help`` or another command.
"""
