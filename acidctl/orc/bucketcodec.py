"""Hive's BucketCodec: the encoded ``bucket`` property of an ACID row id.

V1 (Hive 3/4): ``1 << 29 | bucketId << 16 | statementId``; V0 (pre-Hive-3): the whole int is the
bucket id. Versions other than 0 and 1 are invalid (``Illegal 'bucket' format``).
See ../shared/spec/orc-acid-files.md §4.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

MAX_BUCKET_ID = 4095
MAX_STATEMENT_ID = 4095


@dataclasses.dataclass(frozen=True)
class DecodedBucket:
    version: int
    bucket_id: int | None
    statement_id: int | None

    def to_dict(self) -> dict:
        return {"version": self.version, "bucketId": self.bucket_id, "statementId": self.statement_id}


def decode(value: int) -> DecodedBucket:
    v = value & 0xFFFFFFFF  # compare bits as Java's >>> does on a signed int
    version = (v & 0xE0000000) >> 29
    if version == 0:
        return DecodedBucket(0, v, 0)
    if version == 1:
        return DecodedBucket(1, (v & 0x0FFF0000) >> 16, v & 0x00000FFF)
    return DecodedBucket(version, None, None)


def encode(bucket_id: int, statement_id: int = 0) -> int:
    """V1 encoding; a statement id of -1 (none) encodes as 0, as Hive does."""
    if statement_id < 0:
        statement_id = 0
    if not 0 <= bucket_id <= MAX_BUCKET_ID:
        raise ValueError(f"bucketId out of range: {bucket_id}")
    if statement_id > MAX_STATEMENT_ID:
        raise ValueError(f"statementId out of range: {statement_id}")
    return (1 << 29) | (bucket_id << 16) | statement_id


def decode_fields(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised :func:`decode` of many bucket properties: (version, bucket id, statement id)
    int64 arrays. As :func:`decode`: V0's bucket id is the whole value and its statement id 0;
    for versions other than 0 and 1 (``version > 1``) the ids are meaningless (``decode``'s None)."""
    import numpy as np

    v = np.asarray(values).astype(np.int64) & 0xFFFFFFFF
    version = v >> 29
    is_v1 = version == 1
    ids = np.where(is_v1, (v & 0x0FFF0000) >> 16, v)
    statements = np.where(is_v1, v & 0x00000FFF, 0)
    return version, ids, statements


def decode_array(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(version, bucket id) of :func:`decode_fields`."""
    version, ids, _ = decode_fields(values)
    return version, ids
