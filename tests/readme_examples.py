"""The README's and docs/' examples, run against a fresh demo warehouse (the docs test and `make readme`).

Every ```console block of README.md is a little terminal session: lines starting with ``$ `` are
commands, the lines after one (up to the next ``$ `` or the end of the block) are what it
prints, stdout and stderr together as a terminal shows them, then ``[exit N]`` when it exits
non-zero. ```sh / ```bash blocks are not run (installation, clusters, Spark).

The blocks run in README order, in one shell environment, from a scratch directory that plays the
checkout after ``make demo``: ``demo-warehouse/`` is a fresh ``acidctl demo demo-warehouse``,
``acidctl`` on PATH is this checkout, COLUMNS=80 (an 80-column terminal), no ACIDCTL_*
variables but those the README exports. A command line is run by bash (so ``$PWD`` and quotes
work as typed); ``export NAME=VALUE`` lines change the environment of the commands after them.

The pages under ``docs/`` (``docs/commands/*.md``, ``docs/reference.md``) hold longer examples
the README links to; each page's console blocks run in order on a fresh demo of their own, with
``ACIDCTL_METASTORE_URL`` set as the README's tour exports it (the pages say so).

Comparison (:func:`normalise`), applied to both the README's text and the fresh output: the
scratch directory is shown as ``/home/me/acidctl`` (:data:`CHECKOUT`); what genuinely varies
from run to run is masked — ISO timestamps, dates (not partition values such as
``ds=2025-12-31``) and ``HH:MM:SS`` times, epoch milliseconds, durations and ages (``0.32s``,
``5 s``, ``3m``), fractional numbers (seconds, ratios), the cells of table columns headed as a
time, age or duration (:data:`VOLATILE_HEADER`), the host name and process ids in worker ids,
the user name; then the text is compared as a sequence of words, so column widths and padding
that follow from a varying cell (and the rule lines under table headers) do not count.
Everything else must match.

    python -m tests.readme_examples            # run, report differences (exit 1 if any)
    python -m tests.readme_examples --update   # rewrite README.md's and docs/' outputs (review the diff)
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: how the scratch directory (the checkout after `make demo`) is written in the README
CHECKOUT = "/home/me/acidctl"
COLUMNS = "80"

_BLOCK = re.compile(r"^```console\n(.*?)^```\n", re.S | re.M)


@dataclasses.dataclass
class Example:
    command: str
    output: str  # as written in the README (without a trailing newline)
    line: int  # README line of the command


def parse(text: str) -> list[list[Example]]:
    """The console blocks of ``text``: a list of examples per block."""
    blocks = []
    for m in _BLOCK.finditer(text):
        first_line = text.count("\n", 0, m.start(1)) + 1
        examples: list[Example] = []
        for i, line in enumerate(m.group(1).split("\n")):
            if line.startswith("$ "):
                examples.append(Example(line[2:], "", first_line + i))
            elif examples:
                examples[-1].output += ("\n" if examples[-1].output or line == "" else "") + line
        for e in examples:
            e.output = e.output.strip("\n")
        blocks.append(examples)
    return blocks


def _masks() -> list[tuple[re.Pattern, str]]:
    host = re.escape(socket.gethostname())
    user = re.escape(getpass.getuser())
    return [
        (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?( UTC)?"), "<time>"),
        (re.compile(r"\b\d\d:\d\d:\d\d(\.\d+)?\b"), "<time>"),
        (re.compile(r"(?<![=\w-])\d{4}-\d\d-\d\d\b"), "<date>"),  # not a partition value (ds=...)
        (re.compile(r"(?<![\w.:-])\d+\.\d+(?![\w.:-])"), "<number>"),  # fractional: seconds, ratios
        (re.compile(r"\b1[6-9]\d{11}\b"), "<epoch-ms>"),
        (re.compile(r"(?<![\w.-])\d+(\.\d+)?\s?(ms|s|sec|m|min|h|d)(?![\w-])"), "<duration>"),
        (re.compile(rf"\b{host}(-\d+)*\b"), "<host>"),
        (re.compile(r"\bpid \d+\b"), "pid <pid>"),
        (re.compile(rf"(?<=[\s@=(]){user}(?=[\s@,)]|$)", re.M), "<user>"),
    ]


#: a text table's rule line (tabulate's "simple" format): the column spans
_RULE = re.compile(r"^-+( +-+)+ *$")
#: headers of columns whose cells are times, ages or durations (masked in every row)
VOLATILE_HEADER = re.compile(r"(?i)\b(age|duration|time|start|end|elapsed|heartbeat|seconds)\b|\(ms\)|\bs$")


def mask_volatile_columns(text: str) -> str:
    """Blank the cells of table columns whose header names a time, an age or a duration (``AGE
    S``, ``Duration(ms)``, ``Start Time``, ``TASK S``): they vary from run to run, and a number
    alone carries no unit the other masks could see."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not _RULE.match(line):
            continue
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", line)]
        top = i
        while top > 0 and lines[top - 1].strip() and not _RULE.match(lines[top - 1]):
            top -= 1
        headers = [" ".join(h[a:b].strip() for h in lines[top:i]).strip() for a, b in spans]
        volatile = [
            (a, spans[k + 1][0] if k + 1 < len(spans) else None)
            for k, ((a, _), h) in enumerate(zip(spans, headers))
            if VOLATILE_HEADER.search(h)
        ]
        if not volatile:
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() and not _RULE.match(lines[j]):
            row = lines[j]
            if any(a < len(row) and row[a - 2 : a] != "  " for a, _ in spans[1:]):
                break  # not a row (its columns are two spaces apart): the line after the table
            for a, b in volatile:
                end = len(row) if b is None else b
                if a < len(row):
                    row = row[:a] + " " * (min(end, len(row)) - a) + row[min(end, len(row)) :]
            lines[j] = row
            j += 1
    return "\n".join(lines)


def normalise(text: str, scratch: str | None = None) -> list[str]:
    """``text`` as the words that must match (see the module doc)."""
    if scratch:
        text = text.replace(scratch, CHECKOUT)
    text = mask_volatile_columns(text)
    # a rule line's widths follow from the cells (a masked duration one character longer widens
    # its column): the cells are compared, the rule only as a rule
    text = "\n".join("<rule>" if _RULE.match(line) else line for line in text.split("\n"))
    for pattern, repl in _masks():
        text = pattern.sub(repl, text)
    return text.split()


@dataclasses.dataclass
class Result:
    example: Example
    output: str  # fresh, with the scratch directory shown as CHECKOUT


class Session:
    """A scratch checkout with a fresh demo warehouse, running README command lines."""

    def __init__(self, workdir: Path, *, metastore_env: bool = False):
        self.dir = workdir
        bindir = workdir / ".bin"
        bindir.mkdir()
        exe = bindir / "acidctl"
        exe.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m acidctl "$@"\n')
        exe.chmod(0o755)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ACIDCTL_")}
        self.env.update(
            PATH=f"{bindir}:{os.environ['PATH']}",
            COLUMNS=COLUMNS,
            PYTHONUNBUFFERED="1",
            TZ="UTC",
            HOME=str(workdir / ".home"),
        )
        (workdir / ".home").mkdir()
        if metastore_env:  # the docs pages: as the README's tour exports it
            self.env["ACIDCTL_METASTORE_URL"] = f"sqlite:///{workdir}/demo-warehouse/metastore.db"
        r = self.run("acidctl demo demo-warehouse >/dev/null")
        if r[1] != 0:
            raise RuntimeError(f"acidctl demo failed: {r[0]}")

    def run(self, command: str) -> tuple[str, int]:
        m = re.fullmatch(r"export ([A-Za-z_][A-Za-z0-9_]*)=(.*)", command.strip())
        if m:
            value = subprocess.run(
                ["bash", "-c", f'printf %s "{m.group(2)}"'], cwd=self.dir, env=self.env, capture_output=True, text=True
            ).stdout
            self.env[m.group(1)] = value
            return "", 0
        r = subprocess.run(
            ["bash", "-c", command],
            cwd=self.dir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
        )
        return r.stdout.replace(str(self.dir), CHECKOUT), r.returncode


def shown(output: str, code: int) -> str:
    """What the README shows for a command's output and exit code."""
    output = "\n".join(line.rstrip() for line in output.rstrip("\n").split("\n")).strip("\n")
    if code:
        output += ("\n" if output else "") + f"[exit {code}]"
    return output


def doc_pages() -> list[Path]:
    """The pages under docs/ that hold console examples."""
    return [p for p in sorted(DOCS.rglob("*.md")) if parse(p.read_text())]


def run_readme(text: str | None = None, *, page: Path = README) -> list[Result]:
    """Run every console example of ``text`` (default: the file ``page``, README.md) in order on a
    fresh demo; a docs page's with ``ACIDCTL_METASTORE_URL`` set."""
    text = page.read_text() if text is None else text
    results = []
    scratch = _scratch_dir()
    try:
        session = Session(scratch, metastore_env=page != README)
        for block in parse(text):
            for ex in block:
                out, code = session.run(ex.command)
                results.append(Result(ex, shown(out, code)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def _scratch_dir() -> Path:
    """A new directory whose path is as long as :data:`CHECKOUT`, so that text fitted to 80
    columns wraps as it would in the checkout."""
    base = Path(tempfile.gettempdir())
    stem = "acidctl"
    digits = len(CHECKOUT) - len(str(base)) - 1 - len(stem)
    if digits < 3:  # a long TMPDIR: any unique name will do
        return Path(tempfile.mkdtemp(prefix="acidctl-readme-"))
    for n in range(10**digits):
        p = base / f"{stem}{n:0{digits}d}"
        try:
            p.mkdir()
            return p
        except FileExistsError:
            continue
    return Path(tempfile.mkdtemp(prefix="acidctl-readme-"))


def differences(results: list[Result], page: Path = README) -> list[str]:
    out = []
    name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
    for r in results:
        if normalise(r.example.output) != normalise(r.output):
            out.append(
                f"{name}:{r.example.line}: $ {r.example.command}\n--- README\n{r.example.output}\n--- now\n{r.output}"
            )
    return out


def update(text: str, results: list[Result]) -> str:
    """``text`` with each console example's output replaced by the fresh one (examples whose
    output matches after normalisation keep the README's text, so the diff shows real changes)."""
    fresh = iter(results)
    lines = []

    def block(m: re.Match) -> str:
        body = []
        for line in m.group(1).split("\n"):
            if line.startswith("$ "):
                r = next(fresh)
                keep = normalise(r.example.output) == normalise(r.output)
                body.append(line)
                out = r.example.output if keep else r.output
                if out:
                    body.append(out)
        lines.append(None)
        return "```console\n" + "\n".join(body) + "\n```\n"

    return _BLOCK.sub(block, text)


def main(argv: list[str]) -> int:
    failed = False
    for page in [README, *doc_pages()]:
        name = page.relative_to(ROOT)
        text = page.read_text()
        results = run_readme(text, page=page)
        if "--update" in argv:
            new = update(text, results)
            if new != text:
                page.write_text(new)
                print(
                    f"{name}: outputs rewritten ({len(differences(results, page))} example(s) changed); review `git diff`"
                )
            else:
                print(f"{name}: all {len(results)} examples current")
            continue
        diffs = differences(results, page)
        for d in diffs:
            print(d, end="\n\n")
        print(f"{name}: {len(results) - len(diffs)}/{len(results)} examples match")
        failed = failed or bool(diffs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
