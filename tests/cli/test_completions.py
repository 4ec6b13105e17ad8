"""The shipped completion scripts (completions/) in real bash, zsh and fish.

Each shell runs the committed script exactly as the README installs it, against an ``acidctl``
on PATH that is this checkout: bash sources the script and calls its function with COMP_WORDS /
COMP_CWORD set (and once interactively, under a pty), zsh runs interactively under a pty with
``_acidctl`` in ``fpath`` and ``compinit`` (the first TAB of the session must complete), fish
asks ``complete -C``. The expected words come from the CLI's declarations (command names, option
names, the choices an option documents), not from acidctl's own completion answers.

The shells are Debian packages (scripts/install-test-servers.sh installs zsh and fish); a test
whose shell is missing is skipped unless ACIDCTL_REQUIRE_SERVERS=1 (as `make test` sets).
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPLETIONS = ROOT / "completions"

SHOW_SUBCOMMANDS = {"transactions", "locks", "compactions", "tables", "write-ids"}
OUTPUT_CHOICES = {"text", "json", "wide", "custom-columns="}
ENGINE_CHOICES = {"auto", "local", "spark"}


def _need(shell: str) -> str:
    path = shutil.which(shell)
    if path is None:
        if os.environ.get("ACIDCTL_REQUIRE_SERVERS"):
            pytest.fail(f"{shell} is not installed (scripts/install-test-servers.sh installs it)")
        pytest.skip(f"{shell} is not installed (scripts/install-test-servers.sh installs it)")
    return path


@pytest.fixture(scope="module")
def shell_env(tmp_path_factory) -> dict[str, str]:
    """An environment whose PATH starts with an ``acidctl`` that runs this checkout, a private
    HOME (no user rc files) and a scratch working directory with a few file names."""
    home = tmp_path_factory.mktemp("home")
    bindir = home / "bin"
    bindir.mkdir()
    exe = bindir / "acidctl"
    exe.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m acidctl "$@"\n')
    exe.chmod(0o755)
    work = home / "work"
    (work / "warehouse_one").mkdir(parents=True)
    (work / "wanted.orc").write_text("")
    env = {
        "PATH": f"{bindir}:{os.environ['PATH']}",
        "HOME": str(home),
        "TERM": "xterm",
        "LANG": "C.UTF-8",
        "WORK": str(work),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
    }
    return env


# --- bash -------------------------------------------------------------------------------------


def _bash_complete(env: dict[str, str], words: list[str]) -> list[str]:
    """COMPREPLY after the script's function ran for ``words`` (the last one being completed);
    ``compopt -o default`` (a file name completion request) shows as ``<files>``."""
    _need("bash")
    arr = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    script = (
        f"source {COMPLETIONS / 'acidctl.bash'}\n"
        'compopt() { [ "$1 $2" = "-o default" ] && echo "<files>"; }\n'  # only valid inside real completion
        f"COMP_WORDS=({arr}); COMP_CWORD={len(words) - 1}\n"
        '_acidctl_completion acidctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"\n'
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    r = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script],
        env=env,
        cwd=env["WORK"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "error" not in r.stderr.lower(), r.stderr
    return [line for line in r.stdout.splitlines() if line]


def test_bash_command_names(shell_env):
    assert _bash_complete(shell_env, ["acidctl", "sh"]) == ["show"]
    assert set(_bash_complete(shell_env, ["acidctl", ""])) >= {"dump", "state", "show", "compact", "clean"}


def test_bash_subcommands_options_and_choices(shell_env):
    assert set(_bash_complete(shell_env, ["acidctl", "show", ""])) == SHOW_SUBCOMMANDS
    assert set(_bash_complete(shell_env, ["acidctl", "-o", ""])) == OUTPUT_CHOICES
    assert set(_bash_complete(shell_env, ["acidctl", "compact", "--engine", ""])) == ENGINE_CHOICES
    assert _bash_complete(shell_env, ["acidctl", "compact", "--maj"]) == ["--major"]


def test_bash_paths(shell_env):
    assert _bash_complete(shell_env, ["acidctl", "dump", "wa"]) == ["<files>"]
    assert _bash_complete(shell_env, ["acidctl", "state", ""]) == ["<files>"]


def test_bash_global_options_after_the_command(shell_env):
    """Global options are accepted after the command (issue 22), so they complete there too."""
    after = _bash_complete(shell_env, ["acidctl", "state", "x", "--meta"])
    assert "--metastore" in after
    assert set(_bash_complete(shell_env, ["acidctl", "state", "x", "-o", ""])) == OUTPUT_CHOICES


# --- interactive shells under a pty -----------------------------------------------------------


class _Pty:
    """An interactive shell on a pseudo-terminal: type keys, read what it draws."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str):
        import fcntl
        import struct
        import termios

        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the shell
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
        self.screen = ""

    def read_until(self, pattern: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, _plain(self.screen)):
                return _plain(self.screen)
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    self.screen += os.read(self.fd, 65536).decode("utf-8", "replace")
                except OSError:
                    break
        raise AssertionError(f"{pattern!r} not seen; screen:\n{_plain(self.screen)[-3000:]}")

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.fd)


def _plain(text: str) -> str:
    """The terminal output without escape sequences and carriage returns."""
    text = re.sub(r"\x1b\[[0-9;?]*[ -/]*[@-~]", "", text)
    text = re.sub(r"\x1b[()][A-Za-z0-9]|\x1b[=>]", "", text)
    return text.replace("\r", "")


def _zsh(shell_env) -> _Pty:
    """zsh as the README installs the completion: ``_acidctl`` copied into a directory on
    ``fpath``, then ``compinit``; a fresh session for each test, so the TAB is its first."""
    _need("zsh")
    home = Path(shell_env["HOME"])
    zfunc = home / ".zfunc"
    zfunc.mkdir(exist_ok=True)
    shutil.copy(COMPLETIONS / "_acidctl", zfunc / "_acidctl")
    (home / ".zshrc").write_text(
        "fpath=(~/.zfunc $fpath)\nautoload -Uz compinit && compinit -u\nPS1='READY%% '\nunsetopt beep\n"
    )
    session = _Pty(["zsh", "-i"], {**shell_env, "ZDOTDIR": str(home)}, shell_env["WORK"])
    session.read_until("READY%")
    return session


def test_zsh_first_tab_completes_a_command(shell_env):
    zsh = _zsh(shell_env)
    try:
        zsh.type("acidctl sh\t")
        zsh.read_until(r"acidctl show ")
    finally:
        zsh.close()


@pytest.mark.parametrize(
    "line, expected",
    [
        ("acidctl show \t", SHOW_SUBCOMMANDS),
        ("acidctl compact --engine \t", ENGINE_CHOICES),
        ("acidctl -o \t", OUTPUT_CHOICES),
        ("acidctl dump wan\t", {"acidctl dump wanted.orc"}),
        ("acidctl compact --maj\t", {"acidctl compact --major"}),
        ("acidctl state --deep -o j\t", {"-o json"}),
    ],
)
def test_zsh_subcommands_options_choices_and_paths(shell_env, line, expected):
    zsh = _zsh(shell_env)
    try:
        zsh.type(line)
        last = sorted(expected)[-1]
        screen = zsh.read_until(re.escape(last))
        shown = screen.split(line.split()[-1].rstrip("\t"), 1)[-1] if line.endswith(" \t") else screen
        assert all(e in shown for e in expected), screen
    finally:
        zsh.close()


def test_bash_interactive_tab(shell_env):
    """The sourced script in an interactive bash: ``acidctl sh<TAB>`` becomes ``acidctl show``,
    and a path argument completes a file name."""
    _need("bash")
    home = Path(shell_env["HOME"])
    rc = home / ".bashrc-acidctl"
    rc.write_text(f"source {COMPLETIONS / 'acidctl.bash'}\nPS1='READY$ '\nbind 'set bell-style none'\n")
    bash = _Pty(["bash", "--noprofile", "--rcfile", str(rc), "-i"], shell_env, shell_env["WORK"])
    try:
        bash.read_until(r"READY\$")
        bash.type("acidctl sh\t")
        bash.read_until(r"acidctl show ")
        bash.type("\x15")
        bash.type("acidctl dump wan\t")
        bash.read_until(r"acidctl dump wanted\.orc")
    finally:
        bash.close()


# --- fish ------------------------------------------------------------------------------------


def _fish_complete(env: dict[str, str], line: str) -> list[str]:
    """``complete -C LINE`` in a fish that autoloads the script from
    ``~/.config/fish/completions/`` (where the README installs it; HOME is private)."""
    _need("fish")
    completions = Path(env["XDG_CONFIG_HOME"]) / "fish" / "completions"
    completions.mkdir(parents=True, exist_ok=True)
    shutil.copy(COMPLETIONS / "acidctl.fish", completions / "acidctl.fish")
    r = subprocess.run(
        ["fish", "-c", f"complete -C {_fish_quote(line)}"],
        env=env,
        cwd=env["WORK"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "error" not in r.stderr.lower(), r.stderr
    return [line.split("\t", 1)[0] for line in r.stdout.splitlines() if line]


def _fish_quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def test_fish_commands_subcommands_options(shell_env):
    assert _fish_complete(shell_env, "acidctl sh") == ["show"]
    assert set(_fish_complete(shell_env, "acidctl show ")) == SHOW_SUBCOMMANDS
    assert set(_fish_complete(shell_env, "acidctl -o ")) == OUTPUT_CHOICES
    assert set(_fish_complete(shell_env, "acidctl compact --engine ")) == ENGINE_CHOICES
    assert "--major" in _fish_complete(shell_env, "acidctl compact --ma")


def test_fish_help_texts_keep_their_commas(shell_env):
    _need("fish")
    _fish_complete(shell_env, "acidctl")  # installs the script
    r = subprocess.run(
        ["fish", "-c", "complete -C 'acidctl sh'"],
        env=shell_env,
        cwd=shell_env["WORK"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    [line] = r.stdout.splitlines()
    name, help_text = line.split("\t")
    assert name == "show" and "," in help_text  # "Show transactions, locks, compactions, ..."


def test_fish_paths(shell_env):
    assert _fish_complete(shell_env, "acidctl dump wan") == ["wanted.orc"]
    assert "warehouse_one/" in _fish_complete(shell_env, "acidctl state wa")
