"""The small marker files a listing carries the contents of (orc-acid-files.md §9):
``_orc_acid_version``, ``_metadata_acid`` and ``*_flush_length`` side files, and the parsed
``_metadata_acid`` that tells a Hive 3 compacted base from an INSERT OVERWRITE one."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

from acidctl.acid.dirname import FLUSH_LENGTH_SUFFIX, METADATA_FILE, ORC_ACID_VERSION_FILE

if TYPE_CHECKING:
    from acidctl.acid.listing import ChildEntry

#: marker files whose content the listing carries (small by construction)
MARKER_FILES = (ORC_ACID_VERSION_FILE, METADATA_FILE)


def is_marker_name(name: str) -> bool:
    """Files whose content a listing should carry: version/metadata markers and side files."""
    return name in MARKER_FILES or name.endswith(FLUSH_LENGTH_SUFFIX)


@dataclasses.dataclass(frozen=True)
class MetadataAcid:
    """Parsed ``_metadata_acid``: ``{"thisFileVersion":"0","dataFormat":"compacted"}``."""

    version: str | None
    data_format: str | None
    error: str | None = None

    @property
    def compacted(self) -> bool:
        return self.error is None and self.version == "0" and (self.data_format or "").lower() == "compacted"

    @classmethod
    def parse(cls, content: bytes) -> "MetadataAcid":
        try:
            obj = json.loads(content.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return cls(None, None, f"not JSON: {e}")
        if not isinstance(obj, dict):
            return cls(None, None, "not a JSON object")
        version = obj.get("thisFileVersion")
        fmt = obj.get("dataFormat")
        version = None if version is None else str(version)
        fmt = None if fmt is None else str(fmt)
        return cls(version, fmt)

    def problem(self, hive_version: int) -> str | None:
        """Why Hive would throw reading it (check M04), or None."""
        if self.error:
            return f"unreadable ({self.error})"
        if self.version != "0":
            return f"Unexpected Meta Data version: {self.version}"
        allowed = ("compacted",) if hive_version == 3 else ("compacted", "truncated", "dropped")
        if (self.data_format or "").lower() not in allowed:
            return f"unsupported dataFormat {self.data_format!r} (Hive {hive_version} accepts {', '.join(allowed)})"
        return None


def metadata_of(entry: ChildEntry) -> MetadataAcid | None:
    content = entry.markers.get(METADATA_FILE)
    if content is None:
        return None
    return MetadataAcid.parse(content)
