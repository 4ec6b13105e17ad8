"""Generated docs are current, and the documented exit codes match the code."""

from __future__ import annotations

import re
from pathlib import Path

from acidctl.cli import docgen
from acidctl.errors import EXIT_CODE_DOC

ROOT = Path(__file__).resolve().parents[2]


def test_man_page_and_completions_are_current():
    stale = [
        str(p.relative_to(ROOT)) for p, text in docgen.outputs().items() if not p.exists() or p.read_text() != text
    ]
    assert stale == [], f"run `make docs` and commit: {stale}"


def test_readme_exit_code_table_matches_errors_module():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", section, re.M))
    assert {int(k): v for k, v in rows.items()} == {int(k): v for k, v in EXIT_CODE_DOC.items()}


def test_man_page_lists_every_command():
    import typer

    from acidctl.cli.main import app

    man = docgen.man_page()
    for path, _ in docgen._walk(typer.main.get_command(app)):
        assert f'.SS "acidctl {path}"' in man.replace("\\-", "-")
