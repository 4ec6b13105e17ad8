"""Plain data files of insert-only (micro-managed) tables: ORC, Parquet, Avro and TextFile
(LazySimpleSerDe), read into Arrow tables with the table's columns and types, and written back
in the same format, compression and SerDe properties (../shared/spec/insert-only-and-hive2.md
A.3, A.6.3, A.8, A.9).

* :mod:`acidctl.formats.hivetypes` — Hive column types → ORC type descriptions and Arrow types;
* :mod:`acidctl.formats.storage` — which format and properties a table stores its files with;
* :mod:`acidctl.formats.textfile` — Hive's LazySimpleSerDe text rows;
* :mod:`acidctl.formats.avrofile` — Avro container files (fastavro);
* :mod:`acidctl.formats.files` — one read/write entry point over the four formats.
"""
