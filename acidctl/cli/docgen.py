"""Generate the man pages and ``completions/`` from the CLI itself.

    python -m acidctl.cli.docgen [--check]

* ``man/acidctl.1``: every command, global options, exit codes, environment;
* ``man/acidctl-CMD.1`` (``acidctl-show-compactions.1``, ``acidctl-metastore-init.1``, as git
  names its pages): one page per command, from its ``--help`` and options, the README's examples
  of that command (its ``### `acidctl CMD` `` section: tested against the demo by
  tests/cli/test_docs.py) and the reference text ``docs/commands/<page>.md``;
* ``completions/``: the bash, zsh and fish scripts (acidctl/cli/completion.py).

``--check`` exits 1 when a committed file differs from what the CLI generates (the test suite
runs it, so stale docs fail CI). The pages are written as roff by hand because click/typer ship
no man-page generator.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "commands"
#: the reference text (docs/commands/NAME.md) of commands that share one
DOC_OF = {
    "why": "doctor",
    "metrics": "doctor",
    "initiator": "worker",
    "abort transactions": "worker",
    "abort compactions": "unlock",
    "revert": "compact",
    "demo": None,
}
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


def _inline(text: str) -> str:
    """roff-escaped ``text`` with markdown's `code` and **bold** in bold."""
    text = _roff(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"\\fB\1\\fR", text)
    return re.sub(r"`([^`]+)`", r"\\fB\1\\fR", text)


def markdown_roff(md: str) -> list[str]:
    """The little markdown the reference texts use (headings, paragraphs, bullets, fenced code,
    tables) as roff lines."""
    md = re.sub(r"<!--.*?-->", "", md, flags=re.S)
    out: list[str] = []
    para: list[str] = []
    fence = False

    def flush() -> None:
        if para:
            out.append(_inline(" ".join(x.strip() for x in para)))
            para.clear()

    for line in md.split("\n"):
        if line.startswith("```"):
            flush()
            out += [".PP", ".nf"] if not fence else [".fi"]
            fence = not fence
        elif fence:
            out.append(_roff(line) if line else "\\&")
        elif line.startswith("# "):
            continue
        elif line.startswith("#"):
            flush()
            out += [f'.SS "{_roff(line.lstrip("#").strip().replace("`", ""))}"']
        elif line.startswith("|"):
            flush()
            if re.fullmatch(r"[|\-: ]+", line):
                continue
            out += [".br", _inline(line.strip("|").replace(" | ", "\t").strip())]
        elif re.match(r"\s*[*-] ", line):
            flush()
            out.append(".IP \\(bu 2")
            para.append(re.sub(r"^\s*[*-] ", "", line))
        elif not line.strip():
            flush()
            if out and out[-1] not in (".PP",):
                out.append(".PP")
        else:
            para.append(line)
    flush()
    return out


def page_name(path: str) -> str:
    return "acidctl-" + path.replace(" ", "-")


def readme_examples(path: str) -> list[str]:
    """The ``console`` blocks of the README's section on ``acidctl PATH`` (its heading names the
    command in backquotes), as shown there: tested, with their output."""
    readme = ROOT / "README.md"
    if not readme.exists():
        return []
    text = readme.read_text()
    blocks: list[str] = []
    for section in re.split(r"\n(?=#{2,3} )", text):
        heading = section.split("\n", 1)[0]
        names = re.findall(r"`acidctl ([a-z -]+?)`", heading)
        if not any(n == path or path.startswith(n + " ") for n in names):
            continue
        for block in re.findall(r"```console\n(.*?)```", section, re.S):
            if f"acidctl {path.split()[0]}" in block or re.search(rf"\b{re.escape(path)}\b", block):
                blocks.append(block.rstrip("\n"))
    return blocks


def reference_text(path: str) -> str | None:
    name = DOC_OF.get(path, DOC_OF.get(path.split()[0], path.replace(" ", "-")))
    for cand in ([name] if name else []) + [path.split()[0]]:
        f = DOCS / f"{cand}.md"
        if f.exists():
            return f.read_text()
    return None


def command_page(path: str, cmd, root, all_paths: list[str]) -> str:
    """``man/acidctl-PATH.1``."""
    from acidctl import __version__
    from acidctl.errors import EXIT_CODE_DOC

    name = page_name(path)
    help_text = cmd.help or ""
    paras = [" ".join(p.split()) for p in help_text.split("\n\n") if p.strip()]
    short = (cmd.short_help or (paras[0] if paras else "")).split(". ")[0].rstrip(".")
    if len(short) > 72:  # the NAME line: the first clause
        cut = max(short.rfind(", ", 0, 72), short.rfind(" (", 0, 72), short.rfind(": ", 0, 72))
        short = short[:cut] if cut > 20 else short
    lines = [
        f'.TH {_roff(name.upper())} 1 "" "acidctl {__version__}" "User Commands"',
        ".SH NAME",
        f"{_roff(name)} \\- {_roff(short)}",
        ".SH SYNOPSIS",
        _usage(path, cmd),
        ".SH DESCRIPTION",
    ]
    for i, para in enumerate(paras):
        lines += ([".PP"] if i else []) + [_roff(para)]
    lines += [".SH OPTIONS", *_params(cmd)]
    lines += [
        ".SH GLOBAL OPTIONS",
        _roff(
            "-o/--output FORMAT, -v, -q, --wide, --metastore URL, --profile NAME, --fs-option KEY=VALUE and "
            "--read-only: see acidctl(1)."
        ),
    ]
    examples = readme_examples(path)
    if examples:
        lines += [".SH EXAMPLES", _roff("On the demo warehouse (`make demo`, see acidctl(1)):")]
        for block in examples:
            lines += [".PP", ".nf", *(_roff(x) if x else "\\&" for x in block.split("\n")), ".fi"]
    ref = reference_text(path)
    if ref:
        lines += [".SH NOTES", *markdown_roff(ref)]
    lines += [".SH EXIT STATUS"]
    for code, doc in EXIT_CODE_DOC.items():
        lines += [".TP", f"\\fB{int(code)}\\fR", _roff(doc)]
    others = [p for p in all_paths if p.split()[0] == path.split()[0] and p != path]
    see = ["acidctl(1)"] + [f"{page_name(p)}(1)" for p in others]
    lines += [".SH SEE ALSO", _roff(", ".join(see))]
    return "\n".join(lines) + "\n"


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
        _roff(", ".join(f"{page_name(p)}(1)" for p, _ in _walk(root)) + ", hive(1), orc-tools"),
    ]
    return "\n".join(lines) + "\n"


def completion(shell: str) -> str:
    """The script ``completions/`` ships for ``shell`` (acidctl/cli/completion.py)."""
    from acidctl.cli.completion import script

    return script(shell)


def command_pages() -> dict[str, str]:
    """``{page name: roff}`` for every command."""
    import typer

    from acidctl.cli.main import app

    root = typer.main.get_command(app)
    paths = [p for p, _ in _walk(root)]
    return {page_name(p): command_page(p, cmd, root, paths) for p, cmd in _walk(root)}


def outputs() -> dict[Path, str]:
    files = {ROOT / "man" / "acidctl.1": man_page()}
    for name, text in command_pages().items():
        files[ROOT / "man" / f"{name}.1"] = text
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
