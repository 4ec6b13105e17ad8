"""Packaging metadata and the setup script behind `make demo` / `make test` (report #20)."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_license_is_an_spdx_string():
    """setuptools >= 77 warns ("project.license as a TOML table is deprecated") on every build
    for the table form; PEP 639's SPDX expression is the replacement."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "Apache-2.0"
    assert any(r.replace(" ", "").startswith("setuptools>=77") for r in meta["build-system"]["requires"])


def test_setup_installs_once_for_demo_and_test(tmp_path):
    """scripts/setup.sh with a stand-in .venv: `make demo` after `make test` (or twice) installs
    nothing; demo then test installs the test extras once."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "setup.sh").write_text((ROOT / "scripts" / "setup.sh").read_text())
    (tmp_path / "scripts" / "install-test-servers.sh").write_text("exit 0\n")
    (tmp_path / "pyproject.toml").write_text("")
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    log = tmp_path / "log"
    (venv / "python").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    (venv / "python").chmod(0o755)
    os.utime(tmp_path / "pyproject.toml", (1, 1))
    java = subprocess.run(["bash", "-c", "command -v java"], capture_output=True).returncode == 0
    if not java:  # setup.sh would install Java 17 first; not here
        pytest.skip("no java on this machine: setup.sh would install it")

    def run(*args):
        r = subprocess.run(["bash", "scripts/setup.sh", *args], cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return [line for line in (log.read_text().splitlines() if log.exists() else []) if "install -q -e" in line]

    assert run() == ["-m pip install -q -e .[all]"]
    assert len(run()) == 1  # a second `make demo`
    assert run("--test")[-1] == "-m pip install -q -e .[dev]"
    assert len(run()) == 2 and len(run("--test")) == 2  # demo after test, test again: nothing
