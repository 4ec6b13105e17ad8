"""Shared builders for the acid tests (listing models without a filesystem)."""

from typing import Any, Mapping

from acidctl.acid.dirname import has_acid_prefix, is_hidden
from acidctl.acid.listing import ChildEntry, DirListing, FileInfo
from acidctl.acid.markers import is_marker_name

COMPACTED = b'{"thisFileVersion":"0","dataFormat":"compacted"}'

#: the worked example of directory-state.md §5 (snapshot db.t:14:12:12:13)
EXAMPLE = [
    "base_0000002",
    "base_0000005",
    "delete_delta_0000006_0000010",
    "delete_delta_0000008_0000008_0000",
    "delta_0000001_0000001_0000",
    "delta_0000006_0000006_0000",
    "delta_0000006_0000010",
    "delta_0000007_0000007_0000",
    "delta_0000011_0000011_0000",
    "delta_0000012_0000012_0000",
    "delta_0000013_0000013_0000",
    "delta_0000014_0000014_0000",
]


def acid_dir(*, compacted=False, data=100, version=b"2", **files):
    d = {"bucket_00000": data}
    if version is not None:
        d["_orc_acid_version"] = version
    if compacted:
        d["_metadata_acid"] = COMPACTED
    d.update(files)
    return d


def listing(*names, compacted=(), path="/t", extra=None, **kw):
    """Directories named in ``names`` (each a bucket file + version marker), compacted bases
    listed in ``compacted`` get ``_metadata_acid``; ``extra`` adds raw spec entries."""
    spec = {}
    for n in names:
        spec[n + "/"] = acid_dir(compacted=n in compacted)
    spec.update(extra or {})
    return build_listing(path, spec, **kw)


def roles(state):
    return {c.name: c.role.value for c in state.entries}


def names(cs):
    return [c.name for c in cs]


def build_listing(
    path: str, spec: Mapping[str, Any], *, partition: str | None = None, mtime: float | None = None
) -> DirListing:
    """Build a listing from a nested dict (a listing model without a filesystem).

    ``{"base_0000005/": {"bucket_00000": 100, "_orc_acid_version": b"2"}, "000000_0": 7}``:
    a key ending in ``/`` is a directory (value: its own dict, nested dicts allowed), other
    keys are files whose value is a size (int) or content (bytes, recorded as marker
    content when the name is a marker).
    """
    entries = []
    for key, value in spec.items():
        if key.endswith("/"):
            name = key[:-1]
            files: list[FileInfo] = []
            subdirs: list[str] = []
            markers: dict[str, bytes] = {}
            nested: list[FileInfo] = []
            flat_originals = not has_acid_prefix(name) and not is_hidden(name)

            def walk(prefix: str, d: Mapping[str, Any], out: list[FileInfo]):
                for k, v in d.items():
                    if k.endswith("/"):
                        if prefix == "" and not flat_originals:
                            subdirs.append(k[:-1])
                            if not is_hidden(k[:-1]) and v:
                                walk(k, v, nested)
                        elif not (out is nested and is_hidden(k[:-1])):
                            walk(prefix + k, v, out)
                    elif isinstance(v, (bytes, bytearray)):
                        out.append(FileInfo(prefix + k, len(v), mtime))
                        if prefix == "" and is_marker_name(k):
                            markers[k] = bytes(v)
                    else:
                        out.append(FileInfo(prefix + k, int(v), mtime))

            if value is None:
                entries.append(ChildEntry(name, True, 0, mtime, listed=False))
                continue
            walk("", value, files)
            files.sort(key=lambda f: f.name)
            entries.append(
                ChildEntry(
                    name,
                    True,
                    0,
                    mtime,
                    tuple(files),
                    tuple(sorted(subdirs)),
                    markers,
                    listed=True,
                    nested=tuple(sorted(nested, key=lambda f: f.name)),
                )
            )
        else:
            size = len(value) if isinstance(value, (bytes, bytearray)) else int(value)
            entries.append(ChildEntry(key, False, size, mtime))
    return DirListing(path=path, entries=tuple(entries), partition=partition)
