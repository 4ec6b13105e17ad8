"""Shared builders for the acid tests (listing models without a filesystem)."""

from acidctl.acid.acidstate import DirListing

COMPACTED = b'{"thisFileVersion":"0","dataFormat":"compacted"}'


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
    return DirListing.build(path, spec, **kw)


def roles(state):
    return {c.name: c.role.value for c in state.entries}


def names(cs):
    return [c.name for c in cs]
