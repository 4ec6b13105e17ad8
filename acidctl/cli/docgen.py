"""Generate ``man/acidctl.1`` and ``completions/`` from the CLI itself.

    python -m acidctl.cli.docgen [--check]

``--check`` exits 1 when a committed file differs from what the CLI generates (the test suite
runs it, so stale docs fail CI). The man page is written as roff by hand because click/typer
ship no man-page generator; the completion scripts are typer's own.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPLETIONS = {"bash": "acidctl.bash", "zsh": "_acidctl", "fish": "acidctl.fish"}


def _roff(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.split("\n"))


def _params(cmd) -> list[str]:
    import click

    ctx = click.Context(cmd, info_name="acidctl")
    out = []
    for p in cmd.params:
        if getattr(p, "hidden", False) or p.param_type_name == "argument":
            continue
        rec = p.get_help_record(ctx)
        if not rec:
            continue
        sig, help_text = rec
        out += [".TP", f"\\fB{_roff(sig)}\\fR", _roff(" ".join(help_text.split()))]
    return out


def _usage(path: str, cmd) -> str:
    args = " ".join(
        f"\\fI{_roff(p.metavar or p.name.upper())}\\fR" for p in cmd.params if p.param_type_name == "argument"
    )
    return f".B acidctl {path}\n[\\fIOPTIONS\\fR] {args}".rstrip()


def _walk(group, prefix=""):
    for name in sorted(group.commands):
        cmd = group.commands[name]
        path = f"{prefix}{name}"
        if hasattr(cmd, "commands"):
            yield from _walk(cmd, path + " ")
        else:
            yield path, cmd


def man_page() -> str:
    import typer

    from acidctl import __version__
    from acidctl.cli.main import app
    from acidctl.errors import EXIT_CODE_DOC

    root = typer.main.get_command(app)
    lines = [
        '.TH ACIDCTL 1 "" "acidctl %s" "User Commands"' % __version__,
        ".SH NAME",
        "acidctl \\- inspect, validate, compact and clean Apache Hive ACID tables",
        ".SH SYNOPSIS",
        ".B acidctl",
        "[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]",
        ".SH DESCRIPTION",
        _roff(
            "acidctl reads Hive ACID (transactional ORC) tables directly from storage and from the "
            "metastore database: it dumps ACID ORC files exactly as ORC's FileDump does, validates "
            "table directories against committed write ids, shows transactions, locks and "
            "compactions, and compacts tables on Spark. Results go to stdout (text or JSON), "
            "errors to stderr as one line."
        ),
        ".SH GLOBAL OPTIONS",
        *_params(root),
        ".SH COMMANDS",
    ]
    for path, cmd in _walk(root):
        lines += [
            f'.SS "acidctl {_roff(path)}"',
            _usage(path, cmd),
            ".PP",
            _roff(" ".join((cmd.help or "").split("\n\n")[0].split())),
        ]
        rest = (cmd.help or "").split("\n\n")[1:]
        for para in rest:
            lines += [".PP", _roff(" ".join(para.split()))]
        lines += _params(cmd)
    lines += [".SH EXIT STATUS"]
    for code, doc in EXIT_CODE_DOC.items():
        lines += [".TP", f"\\fB{int(code)}\\fR", _roff(doc)]
    lines += [
        ".SH ENVIRONMENT",
        ".TP",
        "\\fBACIDCTL_METASTORE_URL\\fR",
        "Metastore database URL (SQLAlchemy form).",
        ".TP",
        "\\fBACIDCTL_OUTPUT\\fR",
        "Default for \\fB\\-\\-output\\fR.",
        ".TP",
        "\\fBACIDCTL_PROFILE\\fR",
        "Named profile of the config file.",
        ".TP",
        "\\fBACIDCTL_CONFIG\\fR",
        "Config file path (default \\fI~/.acidctl.toml\\fR).",
        ".SH SEE ALSO",
        "hive(1), orc\\-tools",
    ]
    return "\n".join(lines) + "\n"


def completion(shell: str) -> str:
    """The script ``completions/`` ships for ``shell`` (acidctl/cli/completion.py)."""
    from acidctl.cli.completion import script

    return script(shell)


def outputs() -> dict[Path, str]:
    files = {ROOT / "man" / "acidctl.1": man_page()}
    for shell, name in COMPLETIONS.items():
        files[ROOT / "completions" / name] = completion(shell)
    return files


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    stale = []
    for path, text in outputs().items():
        if "--check" in argv:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print("stale (run `make docs`): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
