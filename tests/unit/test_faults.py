"""acidctl/faults.py: test hooks and crash points do nothing unless their environment variable
is set (production paths call them at every step)."""

import os
import signal
import subprocess
import sys

from acidctl import faults

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_hooks_run_only_inside_the_block(monkeypatch):
    monkeypatch.delenv(faults.HOOKS_ENV, raising=False)
    seen = []
    faults._hooks["before-publish"] = seen.append  # registered, but the variable is not set
    try:
        faults.fire("before-publish", 1)
    finally:
        faults._hooks.clear()
    assert seen == []
    with faults.hooks({"before-publish": seen.append}):
        faults.fire("before-publish", 2)
        faults.fire("after-plan", 3)  # no hook for it
    faults.fire("before-publish", 4)
    assert seen == [2]
    assert faults.HOOKS_ENV not in os.environ


def _child(point_env: str | None, call: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACIDCTL_")}
    env["PYTHONPATH"] = ROOT
    if point_env is not None:
        env[faults.CRASH_ENV] = point_env
    code = f"from acidctl import faults\nfaults.crash_point({call!r})\nprint('survived')"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_crash_point_off_without_the_variable():
    assert _child(None, "after-lock").stdout.strip() == "survived"


def test_crash_point_kills_only_at_its_point():
    assert _child("after-plan", "after-lock").stdout.strip() == "survived"
    r = _child("after-lock", "after-lock")
    assert r.returncode == -signal.SIGKILL and "survived" not in r.stdout


def test_int_point_delivers_sigint_to_the_driver():
    r = _child("int:task-start", "task-start")
    assert r.returncode != 0 and "KeyboardInterrupt" in r.stderr
