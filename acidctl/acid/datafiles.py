"""Every data file under a table, partition or directory, in the order a reader reads them.

Shared by ``dump`` (ACID and plain files) and ``dump --meta``: hidden names (``_``/``.``, Hive's
``hiddenFileFilter``) and ``_flush_length`` side files are skipped, as FileDump's walk does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acidctl.acid.dirname import FLUSH_LENGTH_SUFFIX, BaseDir, delta_read_order, is_hidden, parse_acid_dir

if TYPE_CHECKING:
    from acidctl.fs import TableFS


def _hidden(name: str) -> bool:
    """Hidden (Hive's ``hiddenFileFilter``) or an ``_flush_length`` side file."""
    return is_hidden(name) or name.endswith(FLUSH_LENGTH_SUFFIX)


def _dir_sort_key(name: str):
    """Reader order: originals first, then bases by write id, then deltas in Hive's order
    (:func:`acidctl.acid.dirname.delta_read_order`), then name."""
    d = parse_acid_dir(name)
    if d is None:
        return (0, 0, 0, 0, name)
    if isinstance(d, BaseDir):
        return (1, d.write_id, 0, 0, name)
    return (2, *delta_read_order(d), name)


def list_data_files(tfs: TableFS, root: str) -> list[str]:
    """Every data file under ``root`` in reader order, skipping hidden names (``_``/``.``)
    and ``_flush_length`` side files, as FileDump does."""
    info = tfs.info(root)
    if not info.is_dir:
        return [root]
    out: list[str] = []

    def walk(path: str):
        entries = [e for e in tfs.ls(path) if not _hidden(e.name)]
        files = sorted((e for e in entries if not e.is_dir), key=lambda e: e.name)
        dirs = sorted((e for e in entries if e.is_dir), key=lambda e: _dir_sort_key(e.name))
        out.extend(e.path for e in files)
        for d in dirs:
            walk(d.path)

    walk(root)
    return out
