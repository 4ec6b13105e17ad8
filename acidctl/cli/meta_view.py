"""Rendering of ``acidctl dump --meta`` (text and JSON)."""

from __future__ import annotations

from typing import Any

from acidctl.cli.output import Col, table
from acidctl.errors import InvalidInputError, ValidationFailed
from acidctl.units import plural, size


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
        raise ValidationFailed(
            f"{plural(data['summary']['errors'], 'error-level finding')} in {plural(len(reports), 'file')}"
        )


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
                + (f", block size {size(r['compression_block_size'])}" if r["compression"] != "NONE" else ""),
            ),
            (
                "Length",
                size(r["length"])
                + (f" of {size(r['file_length'])} (flush length)" if r["length"] != r["file_length"] else ""),
            ),
            ("Rows", r["rows"]),
            ("Stripes", len(r["stripes"])),
            ("Row index stride", r["row_index_stride"]),
            ("ACID schema", "yes" if r["is_acid"] else "no"),
            ("Schema", _spaced(r["schema"])),
        ]
        if r["event_counts"] is not None:
            c = r["event_counts"]
            facts.append(
                (
                    "Events",
                    f"{plural(c['inserts'], 'insert')}, {plural(c['updates'], 'update')}, {plural(c['deletes'], 'delete')}",
                )
            )
        out.append(table(facts, [Col("Property"), Col("Value", text=True)]))
        if r["stripes"]:
            out.append("")
            keys = r["key_index"] or []
            rows = []
            for s in r["stripes"]:
                k = keys[s["index"]] if s["index"] < len(keys) else None
                rows.append((s["index"], s["offset"], s["length"], s["rows"], ",".join(map(str, k)) if k else "-"))
            out.append(
                table(
                    rows,
                    [
                        Col("Stripe", "index"),
                        Col("Offset"),
                        Col("Length"),
                        Col("Rows"),
                        Col("Key Index Entry", "key_index"),
                    ],
                )
            )
        if r["column_statistics"]:
            out.append("")
            stat_rows: list[tuple] = []
            names = column_names(r["schema"])
            for i, st in enumerate(r["column_statistics"]):
                extra = {k: v for k, v in st.items() if k not in ("kind", "number_of_values", "has_null")}
                stat_rows.append(
                    (
                        i,
                        names[i] if i < len(names) else "",
                        st.get("kind"),
                        st.get("number_of_values"),
                        st.get("has_null"),
                        ", ".join(f"{k}={_short(v)}" for k, v in extra.items()),
                    )
                )
            out.append(
                table(
                    stat_rows,
                    [
                        Col("Column", "column_statistics"),
                        Col("Name", "schema"),
                        Col("Kind"),
                        Col("Values", "number_of_values"),
                        Col("Has Null"),
                        Col("Statistics", "column_statistics", text=True),
                    ],
                )
            )
        if r["user_metadata"]:
            out.append("")
            out.append(table(sorted(r["user_metadata"].items()), [Col("User Metadata"), Col("Value", text=True)]))
        out.append("")
        if r["findings"]:
            out.append(
                table(
                    [(f["severity"], f["check"], f["message"]) for f in r["findings"]],
                    [Col("Severity"), Col("Check"), Col("Finding", "message", text=True)],
                )
            )
        else:
            out.append("ACID checks: no findings" if r["is_acid"] else "Not an ACID file (original/plain ORC)")
        out.append("")
    s = data["summary"]
    out.append(f"{plural(s['files'], 'file')}, {plural(s['errors'], 'error')}, {plural(s['warnings'], 'warning')}")
    return "\n".join(out)


def _short(v) -> str:
    s = repr(v) if not isinstance(v, str) else v
    s = s.replace("\n", "\\n")
    return s if len(s) <= 40 else s[:37] + "..."


def _spaced(schema: str) -> str:
    """An ORC type string with a space after each field separator (not inside ``decimal(10,2)``),
    so that a terminal wraps it between fields, never inside a name or type; as ORC prints it
    (no spaces) where nothing wraps (pipes, files, ``--wide``) or it fits."""
    import re

    from acidctl.cli.output import terminal_width

    limit = terminal_width()
    if not limit or len(schema) + 18 <= limit:  # 18: the "Schema" cell and the gap before it
        return schema
    return re.sub(r",(?![^(]*\))", ", ", schema)


def column_names(schema: str) -> list[str]:
    """The name of each ORC column id (the type tree in pre-order, id 0 the root) from the type
    string: ``struct<a:int,row:struct<id:int>>`` → ``["(root)", "a", "row", "row.id"]``; list
    elements, map keys and values as ORC names them (``_elem``, ``_key``, ``_value``), union
    members by index."""
    names: list[str] = []
    pos = 0

    def ident() -> str:
        nonlocal pos
        start = pos
        if schema[pos : pos + 1] == "`":  # a quoted field name
            end = schema.index("`", pos + 1)
            pos = end + 1
            return schema[start + 1 : end]
        while pos < len(schema) and schema[pos] not in ":<>,()":
            pos += 1
        return schema[start:pos]

    def typ(name: str) -> None:
        nonlocal pos
        names.append(name)
        kind = ident().lower()
        if pos < len(schema) and schema[pos] == "(":  # decimal(10,2), char(5), varchar(10)
            pos = schema.index(")", pos) + 1
        if pos >= len(schema) or schema[pos] != "<":
            return
        pos += 1
        i = 0
        while True:
            if kind == "struct":
                field = ident()
                pos += 1  # ':'
                typ(f"{name}.{field}" if name else field)
            else:
                child = {"array": "_elem", "map": ("_key", "_value")[min(i, 1)]}.get(kind, str(i))
                typ(f"{name}.{child}" if name else child)
            i += 1
            if schema[pos] == ",":
                pos += 1
                continue
            pos += 1  # '>'
            return

    try:
        typ("")
    except (ValueError, IndexError):  # a type string this parser does not know: ids only
        return []
    names[0] = "(root)"
    return names
