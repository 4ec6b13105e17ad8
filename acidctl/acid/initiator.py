"""The Initiator's minor-vs-major decision (../shared/spec/directory-state.md §8).

:func:`recommend` mirrors Hive 3's ``Initiator.determineCompactionType`` /
``checkForCompaction`` (plus Hive 4's ``CompactorUtil.determineCompactionType`` additions) on an
:class:`~acidctl.acid.acidstate.AcidState` computed with the **compactor** write-id list and
``ignore_empty_files=False`` (see :func:`compactor_state`), which is what the Initiator does.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any, Mapping

from acidctl.acid.acidstate import AcidState, Kind, NamedChild, get_acid_state
from acidctl.acid.dirname import foreign_extension
from acidctl.acid.listing import DirListing
from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.errors import UsageError
from acidctl.units import ratio as fmt_ratio

DELTA_NUM_KEY = "hive.compactor.delta.num.threshold"
DELTA_PCT_KEY = "hive.compactor.delta.pct.threshold"
ABORTED_KEY = "hive.compactor.abortedtxn.threshold"
THRESHOLD_PREFIX = "compactorthreshold."
NO_AUTO_COMPACTION = "no_auto_compaction"

NONE, MINOR, MAJOR = "none", "minor", "major"


def _no_auto_value(params: Mapping[str, str] | None) -> str | None:
    """``MetaStoreUtils.getNoAutoCompact``: the lower-case key, else the upper-case one."""
    if not params:
        return None
    v = params.get(NO_AUTO_COMPACTION)
    return v if v is not None else params.get(NO_AUTO_COMPACTION.upper())


def no_auto_compaction(
    table_params: Mapping[str, str] | None, db_params: Mapping[str, str] | None = None, *, hive_version: int = 3
) -> tuple[bool, str | None]:
    """Whether the Initiator skips the table for ``no_auto_compaction``, and which level
    decided (``"database"`` / ``"table"`` / None). Hive 3 reads the table property only; Hive 4
    (HIVE-26793, ``MetaStoreUtils.isNoAutoCompactSet``) lets a database property decide whenever
    it is present — ``false`` there overrides ``true`` on the table. Values compare as Java's
    ``Boolean.parseBoolean`` (``true`` in any case)."""
    if hive_version >= 4:
        dbv = _no_auto_value(db_params)
        if dbv is not None:
            return dbv.lower() == "true", "database"
    tv = _no_auto_value(table_params)
    return (tv is not None and tv.lower() == "true"), ("table" if tv is not None else None)


@dataclasses.dataclass(frozen=True)
class Thresholds:
    delta_num: int = 10
    delta_pct: float = 0.1
    aborted_txn: int = 1000
    source: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False)  # key → "default"|"table"

    @classmethod
    def from_table_properties(
        cls, props: Mapping[str, str] | None, *, defaults: "Thresholds | None" = None
    ) -> "Thresholds":
        """Apply ``compactorthreshold.<key>`` TBLPROPERTIES over the defaults (10 / 0.1 / 1000)."""
        base = defaults or cls()
        props = props or {}
        out: dict[str, Any] = {
            "delta_num": base.delta_num,
            "delta_pct": base.delta_pct,
            "aborted_txn": base.aborted_txn,
        }
        source = {DELTA_NUM_KEY: "default", DELTA_PCT_KEY: "default", ABORTED_KEY: "default"}
        for field, key, conv in (
            ("delta_num", DELTA_NUM_KEY, int),
            ("delta_pct", DELTA_PCT_KEY, float),
            ("aborted_txn", ABORTED_KEY, int),
        ):
            raw = props.get(THRESHOLD_PREFIX + key)
            if raw is None:
                continue
            try:
                out[field] = conv(str(raw).strip())
            except ValueError:
                raise UsageError(f"table property {THRESHOLD_PREFIX + key}={raw!r} is not a number") from None
            source[key] = "table"
        return cls(**out, source=source)

    def to_dict(self) -> dict:
        return {
            DELTA_NUM_KEY: self.delta_num,
            DELTA_PCT_KEY: self.delta_pct,
            ABORTED_KEY: self.aborted_txn,
            "source": dict(self.source),
        }


@dataclasses.dataclass
class Recommendation:
    type: str  # "none" | "minor" | "major"
    reasons: list[str]
    base_bytes: int
    delta_bytes: int
    delta_count: int  # current deltas + delete deltas (compactor view)
    insert_delta_count: int
    delete_delta_count: int
    ratio: float | None  # delta_bytes / base_bytes (None when base_bytes == 0)
    no_base: bool
    thresholds: Thresholds
    aborted_txn_count: int | None = None
    auto_compaction_disabled: bool = False
    ratio_exceeded: bool = False  # ratio > delta.pct.threshold in Java float arithmetic

    @property
    def due(self) -> bool:
        return self.type != NONE

    def to_dict(self) -> dict:
        return {
            "type": self.type,
            "reasons": list(self.reasons),
            "base_bytes": self.base_bytes,
            "delta_bytes": self.delta_bytes,
            "delta_count": self.delta_count,
            "insert_delta_count": self.insert_delta_count,
            "delete_delta_count": self.delete_delta_count,
            "ratio": self.ratio,
            "no_base": self.no_base,
            "thresholds": self.thresholds.to_dict(),
            "aborted_txn_count": self.aborted_txn_count,
            "auto_compaction_disabled": self.auto_compaction_disabled,
            "ratio_exceeded": self.ratio_exceeded,
        }


def _f32(x: float) -> float:
    return struct.unpack(">f", struct.pack(">f", x))[0]


def compactor_state(
    listing: DirListing,
    write_ids: WriteIdList,
    *,
    txns: TxnList | None = None,
    hive_version: int = 3,
    names: list[NamedChild] | None = None,
) -> AcidState:
    """``getAcidState`` as the Initiator runs it: compactor list, empty files not ignored.
    ``names``: :func:`~acidctl.acid.acidstate.classify_names` of the listing, when the caller
    already has it (one parse of every name for the reader's and the compactor's run)."""
    wl = write_ids if write_ids.compactor else write_ids.for_compactor()
    return get_acid_state(listing, wl, txns=txns, hive_version=hive_version, ignore_empty_files=False, names=names)


def recommend(
    state: AcidState,
    *,
    thresholds: Thresholds | None = None,
    aborted_txn_count: int | None = None,
    insert_only: bool = False,
    hive_version: int | None = None,
    query_based: bool = False,
    old_aborted_txn: bool = False,
    no_auto_compaction: bool = False,
) -> Recommendation:
    """Minor / major / none for one partition, with the reasons.

    ``aborted_txn_count`` (metastore): aborted txns touching the partition; more than the
    threshold → MAJOR. ``old_aborted_txn`` (Hive 4, metastore): an aborted txn older than
    ``hive.compactor.aborted.txn.time.threshold`` → MINOR. ``query_based`` (Hive 4): a MINOR on a
    partition with raw files becomes MAJOR.
    """
    t = thresholds or Thresholds()
    hv = hive_version or state.hive_version
    base_bytes = state.base.bytes if state.base is not None else 0
    # Hive's Initiator sums every original's length; a file whose name says it is no ORC file
    # (D12: extra.csv) is not table data — every read of the partition fails on it — and
    # counting it made a 4-byte stray file the "base" of a 1.46e+03 delta/base ratio (S10)
    base_bytes += sum(o.size for o in state.originals if foreign_extension(o.rel) is None)
    delta_bytes = sum(c.bytes for c in state.deltas)
    n = len(state.deltas)
    n_ins = sum(1 for c in state.deltas if c.kind is Kind.DELTA)
    ratio = (delta_bytes / base_bytes) if base_bytes > 0 else None
    # Java: (float) deltaSize / (float) baseSize > deltaPctThreshold (all float32)
    big = ratio is not None and _f32(_f32(delta_bytes) / _f32(base_bytes)) > _f32(t.delta_pct)
    reasons: list[str] = []

    def result(kind: str, no_base: bool = False) -> Recommendation:
        return Recommendation(
            kind,
            reasons,
            base_bytes,
            delta_bytes,
            n,
            n_ins,
            n - n_ins,
            ratio,
            no_base,
            t,
            aborted_txn_count,
            no_auto_compaction,
            big,
        )

    if no_auto_compaction:
        reasons.append(
            f"{NO_AUTO_COMPACTION}=true: the Initiator skips this table (recommendation shown for a manual run)"
        )
    if aborted_txn_count is not None and aborted_txn_count > t.aborted_txn:
        reasons.append(f"{aborted_txn_count} aborted txns > {ABORTED_KEY} {t.aborted_txn}")
        return result(MAJOR)
    no_base = False
    if base_bytes == 0 and delta_bytes > 0:
        no_base = True
    else:
        multi_base = hv == 4 and delta_bytes == 0 and any(c.kind is Kind.BASE for c in state.obsolete)
        if big:
            reasons.append(
                f"delta bytes / base bytes = {delta_bytes}/{base_bytes} = {fmt_ratio(ratio)} > {DELTA_PCT_KEY} {t.delta_pct:g}"
            )
            return result(MAJOR)
        if multi_base:
            reasons.append("no deltas and an obsolete base besides the current one (Hive 4 multiBase)")
            return result(MAJOR)
    if n > t.delta_num:
        reasons.append(f"{n} current deltas > {DELTA_NUM_KEY} {t.delta_num}")
        if insert_only:
            reasons.append("insert-only table: always major")
            return result(MAJOR, no_base)
        if no_base:
            reasons.append("no base (and no original files): major")
            return result(MAJOR, no_base)
        if hv == 4 and query_based and state.originals:
            reasons.append("query-based compactor cannot run minor on raw files: major")
            return result(MAJOR, no_base)
        return result(MINOR, no_base)
    if hv == 4 and old_aborted_txn:
        reasons.append("an aborted txn is older than hive.compactor.aborted.txn.time.threshold")
        return result(MINOR, no_base)
    if not reasons or reasons[-1].startswith(NO_AUTO_COMPACTION):
        ratio_txt = fmt_ratio(ratio)
        reasons.append(f"{n} deltas <= {t.delta_num}; delta/base ratio {ratio_txt} <= {t.delta_pct:g}")
    return result(NONE, no_base)
