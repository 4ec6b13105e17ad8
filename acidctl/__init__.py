"""acidctl: the admin tool for Apache Hive ACID tables."""

__version__ = "0.1.0"
