"""Rendering of ``acidctl dump --meta`` (text and JSON)."""

from __future__ import annotations

from typing import Any

from acidctl.cli.output import table
from acidctl.errors import InvalidInputError, ValidationFailed


def _dir_context(path: str):
    """(kind, (min, max)) from the parent directory name, when it is an ACID directory."""
    from acidctl.acid.dirname import BaseDir, parse_acid_dir

    parts = path.rstrip("/").split("/")
    d = parse_acid_dir(parts[-2]) if len(parts) > 1 else None
    if d is None:
        return None, None
    if isinstance(d, BaseDir):
        return "base", None
    return ("delete_delta" if d.delete else "delta"), (d.min_write_id, d.max_write_id)


def run_meta(settings, paths: list[str]) -> None:
    from acidctl.acid.datafiles import list_data_files
    from acidctl.findings import has_errors
    from acidctl.orc.meta import inspect_file

    reports = []
    for p in paths:
        tfs = settings.table_fs(p)
        files = list_data_files(tfs, tfs.root)
        if not files:  # as `dump` without --meta (exit 7), not an empty success
            raise InvalidInputError(f"no data files under {tfs.display(tfs.root)}")
        for f in files:
            kind, rng = _dir_context(f)
            reports.append(inspect_file(tfs, f, dir_kind=kind, dir_range=rng))
    findings = [f for r in reports for f in r.findings]
    data: dict[str, Any] = {
        "files": [r.to_dict() for r in reports],
        "summary": {
            "files": len(reports),
            "errors": sum(f.severity.value == "error" for f in findings),
            "warnings": sum(f.severity.value == "warn" for f in findings),
        },
    }
    settings.output.emit(data, _text)
    if has_errors(findings):
        raise ValidationFailed(f"{data['summary']['errors']} error-level finding(s) in {len(reports)} file(s)")


def _text(data: dict) -> str:
    out = []
    for r in data["files"]:
        out.append(f"File: {r['path']}")
        facts = [
            ("File version", r["format_version"]),
            (
                "Writer",
                f"{r['writer']} (writer version {r['writer_version']})"
                + (f", {r['software_version']}" if r["software_version"] else ""),
            ),
            (
                "Compression",
                r["compression"]
                + (f", block size {r['compression_block_size']}" if r["compression"] != "NONE" else ""),
            ),
            (
                "Length",
                f"{r['length']} bytes"
                + (f" of {r['file_length']} (flush length)" if r["length"] != r["file_length"] else ""),
            ),
            ("Rows", r["rows"]),
            ("Stripes", len(r["stripes"])),
            ("Row index stride", r["row_index_stride"]),
            ("ACID schema", "yes" if r["is_acid"] else "no"),
            ("Schema", r["schema"]),
        ]
        if r["event_counts"] is not None:
            c = r["event_counts"]
            facts.append(("Events", f"{c['inserts']} inserts, {c['updates']} updates, {c['deletes']} deletes"))
        out.append(table(facts, ["property", "value"]))
        if r["stripes"]:
            out.append("")
            keys = r["key_index"] or []
            rows = []
            for s in r["stripes"]:
                k = keys[s["index"]] if s["index"] < len(keys) else None
                rows.append((s["index"], s["offset"], s["length"], s["rows"], ",".join(map(str, k)) if k else "-"))
            out.append(table(rows, ["stripe", "offset", "length", "rows", "key index entry"]))
        if r["column_statistics"]:
            out.append("")
            rows = []
            for i, st in enumerate(r["column_statistics"]):
                extra = {k: v for k, v in st.items() if k not in ("kind", "number_of_values", "has_null")}
                rows.append(
                    (
                        i,
                        st.get("kind"),
                        st.get("number_of_values"),
                        st.get("has_null"),
                        ", ".join(f"{k}={_short(v)}" for k, v in extra.items()),
                    )
                )
            out.append(table(rows, ["column", "kind", "values", "has null", "statistics"]))
        if r["user_metadata"]:
            out.append("")
            out.append(table(sorted(r["user_metadata"].items()), ["user metadata", "value"]))
        out.append("")
        if r["findings"]:
            out.append(
                table(
                    [(f["severity"], f["check"], f["message"]) for f in r["findings"]], ["severity", "check", "finding"]
                )
            )
        else:
            out.append("ACID checks: no findings" if r["is_acid"] else "Not an ACID file (original/plain ORC)")
        out.append("")
    s = data["summary"]
    out.append(f"{s['files']} file(s), {s['errors']} error(s), {s['warnings']} warning(s)")
    return "\n".join(out)


def _short(v) -> str:
    s = repr(v) if not isinstance(v, str) else v
    s = s.replace("\n", "\\n")
    return s if len(s) <= 40 else s[:37] + "..."
