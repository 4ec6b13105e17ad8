"""Generated docs are current, the README's examples still print what the README shows, and the
documented exit codes match the code."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from acidctl.cli import docgen
from acidctl.errors import EXIT_CODE_DOC
from tests import readme_examples as rx

ROOT = Path(__file__).resolve().parents[2]


def _command_paths() -> list[str]:
    import typer

    from acidctl.cli.main import app

    return [p for p, _ in docgen._walk(typer.main.get_command(app))]


def test_man_pages_and_completions_are_current():
    stale = [
        str(p.relative_to(ROOT)) for p, text in docgen.outputs().items() if not p.exists() or p.read_text() != text
    ]
    assert stale == [], f"run `make docs` and commit: {stale}"


@pytest.mark.parametrize("page,heading", [("README.md", "## Exit codes"), ("docs/reference.md", "## Exit codes")])
def test_exit_code_tables_match_errors_module(page, heading):
    text = (ROOT / page).read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", section, re.M))
    assert {int(k): v for k, v in rows.items()} == {int(k): v for k, v in EXIT_CODE_DOC.items()}


def test_man_page_lists_every_command():
    man = docgen.man_page().replace("\\-", "-")
    for path in _command_paths():
        assert f'.SS "acidctl {path}"' in man


def test_one_man_page_per_command():
    """``man acidctl-compact``, ``man acidctl-show-compactions``, ... as git names its pages:
    each with a synopsis, a description, the options and the exit codes."""
    pages = {p.name for p in (ROOT / "man").glob("acidctl-*.1")}
    want = {f"acidctl-{path.replace(' ', '-')}.1" for path in _command_paths()}
    assert pages == want
    for path in _command_paths():
        text = (ROOT / "man" / f"acidctl-{path.replace(' ', '-')}.1").read_text()
        for section in (".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH OPTIONS", ".SH EXIT STATUS"):
            assert section in text, (path, section)
        assert f".B acidctl {path}" in text.replace("\\-", "-")
    # the reference moved out of the README is in the pages
    compact = (ROOT / "man" / "acidctl-compact.1").read_text()
    assert ".SH NOTES" in compact and "Nothing is lost" in compact
    assert ".SH EXAMPLES" in compact and "compact \\-\\-due default.sales" in compact


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_pages_render():
    for page in sorted((ROOT / "man").glob("*.1")):
        r = subprocess.run(
            ["man", "-l", str(page)], capture_output=True, text=True, env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin"}
        )
        assert r.returncode == 0 and "NAME" in r.stdout, (page, r.stderr)
        assert "error" not in r.stderr.lower(), (page, r.stderr)


def test_readme_sqlite_urls_are_absolute():
    """Report #7: ``sqlite:///tmp/x.db`` is relative to the current directory. Every URL in the
    README's commands is absolute (four slashes, or built from ``$PWD``)."""
    readme = (ROOT / "README.md").read_text()
    commands = [line for line in readme.splitlines() if line.startswith(("$ ", "acidctl "))]
    bad = [c for c in commands if re.search(r"sqlite:///(?![/$])", c)]
    assert bad == []


def test_normalise_masks_what_varies_and_nothing_else():
    a = "ds=2025-12-31  2026-11-27 03:44:20.657  took 0.698s, age 5 s  rows 6\nfile:/x"
    b = "ds=2025-12-31  2026-11-28 04:01:02.003  took 1.2s, age 19 s  rows 6\nfile:/x"
    assert rx.normalise(a) == rx.normalise(b)
    assert rx.normalise(a) != rx.normalise(a.replace("rows 6", "rows 7"))
    assert rx.normalise(a) != rx.normalise(a.replace("ds=2025-12-31", "ds=2025-12-30"))
    table = "ID    AGE S    STATE\n----  -------  -----\n1     77       open\n"
    assert rx.normalise(table) == rx.normalise(table.replace("77", "1234"))
    assert rx.normalise(table) != rx.normalise(table.replace("open", "aborted"))


def test_normalise_a_duration_column_one_character_wider():
    """A TIME cell of 202ms instead of 92ms widens its column and its rule by one; the line after
    the table (not a row: its words are not two spaces apart at the column starts) is compared
    as text, not blanked at the TIME column's position."""
    readme = (
        "PARTITION      ROWS  TIME   REQUEST\n"
        "-------------  ----  -----  ---------\n"
        "ds=2025-12-31  6     202ms  claimed 2\n"
        "compacted: 1 of 2 partitions, 7 rows in, 6 rows out, 3.7 KiB in, 1.7 KiB out,\n"
        "    1.1s"
    )
    now = (
        "PARTITION      ROWS  TIME  REQUEST\n"
        "-------------  ----  ----  ---------\n"
        "ds=2025-12-31  6     92ms  claimed 2\n"
        "compacted: 1 of 2 partitions, 7 rows in, 6 rows out, 3.7 KiB in, 1.7 KiB out,\n"
        "    399ms"
    )
    assert rx.normalise(readme) == rx.normalise(now)
    assert rx.normalise(readme) != rx.normalise(now.replace("6 rows out", "5 rows out"))
    assert rx.normalise(readme) != rx.normalise(now.replace("claimed 2", "claimed 3"))


def test_parse_and_update_round_trip():
    text = "x\n```console\n$ acidctl a\nold\n\n$ export X=1\n$ acidctl b\n```\n```sh\n$ acidctl c\n```\n"
    [[a, x, b]] = rx.parse(text)
    assert (a.command, a.output, x.command, b.command) == ("acidctl a", "old", "export X=1", "acidctl b")
    new = rx.update(text, [rx.Result(a, "new"), rx.Result(x, ""), rx.Result(b, "out\n[exit 3]")])
    assert (
        new
        == "x\n```console\n$ acidctl a\nnew\n$ export X=1\n$ acidctl b\nout\n[exit 3]\n```\n```sh\n$ acidctl c\n```\n"
    )


@pytest.mark.slow
def test_readme_examples_print_what_the_readme_shows():
    """Every ```console example of the README, run in order on a fresh demo warehouse
    (tests/readme_examples.py; `make readme` rewrites the outputs)."""
    results = rx.run_readme()
    assert len(results) >= 12  # the longer ones run from docs/ (below)
    diffs = rx.differences(results)
    assert diffs == [], "README examples differ (run `make readme` and review the diff):\n\n" + "\n\n".join(diffs)


def _doc_pages() -> list[Path]:
    return rx.doc_pages()


@pytest.mark.slow
@pytest.mark.parametrize("page", _doc_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_pages_examples_print_what_they_show(page):
    """The longer outputs the README links to (docs/commands/*.md) are run like the README's:
    each page on a fresh demo, ACIDCTL_METASTORE_URL set as the tour exports it."""
    results = rx.run_readme(page=page)
    assert results
    diffs = rx.differences(results, page)
    assert diffs == [], f"{page.name} examples differ (run `make readme`):\n\n" + "\n\n".join(diffs)


def test_docs_pages_with_examples_exist():
    """The README's links to longer outputs land on pages whose examples the test above runs."""
    pages = {str(p.relative_to(ROOT)) for p in rx.doc_pages()}
    assert {
        "docs/commands/state.md",
        "docs/commands/dump.md",
        "docs/commands/doctor.md",
        "docs/commands/export.md",
        "docs/commands/upgrade-check.md",
    } <= pages
    readme = (ROOT / "README.md").read_text()
    for page in pages:
        assert f"]({page})" in readme, page


def test_readme_stays_short():
    """Issue 22: the README is a tour and one short section per command (at most ~350 lines);
    depth goes to docs/ and the man pages. Every section the issue names is there."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 360  # "~350": room for a short section more
    for heading in ("## Install", "## A tour on the demo warehouse", "## Commands", "## Exit codes", "## Safety"):
        assert f"\n{heading}" in readme, heading
    assert "## Completions and man pages" in readme
    for extra in ("`spark`", "`postgres`", "`thrift`", "`iceberg`", "`delta`", "`html`", "`all`"):
        assert extra in readme.split("## Install", 1)[1].split("\n## ", 1)[0], extra


def test_examples_fit_80_columns():
    """The examples run at COLUMNS=80 (and the tests above compare them with a fresh run), so
    what they show must fit there: every line but data (JSON rows, FileDump's 120-character
    separator) and the one-line errors (acidctl: error: ..., never wrapped so scripts can grep
    them) is at most 80 columns."""
    wide = []
    for page in [rx.README, *rx.doc_pages()]:
        for block in rx.parse(page.read_text()):
            for ex in block:
                for line in ex.output.split("\n"):
                    if line.startswith(("{", "acidctl: error: ")) or set(line) == {"_"}:
                        continue
                    if len(line) > 80:
                        wide.append(f"{page.name}: $ {ex.command}: {line}")
    assert wide == []
