"""Progress on stderr for long merged reads (new-user report): only to a terminal, never on
stdout, never in JSON mode, never with -q; short runs print nothing."""

from __future__ import annotations

import io
import json
import sys
import types

import pytest

from acidctl.cli import progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def settings(*, json_mode=False, quiet=False, err=None):
    return types.SimpleNamespace(output=types.SimpleNamespace(json=json_mode, err=err or Tty()), quiet=quiet)


def test_only_a_terminal_gets_progress():
    assert progress.progress_stream(settings()) is not None
    assert progress.progress_stream(settings(err=io.StringIO())) is None  # a pipe or file
    assert progress.progress_stream(settings(json_mode=True)) is None
    assert progress.progress_stream(settings(quiet=True)) is None


def test_not_when_rows_go_to_the_same_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stdout", Tty())
    assert progress.progress_stream(settings(), rows_on_stdout=True) is None
    assert progress.progress_stream(settings(), rows_on_stdout=False) is not None


def test_status_line_waits_throttles_and_clears():
    now = [0.0]
    err = Tty()
    line = progress.StatusLine(err, "acidctl: x", delay=1.0, interval=0.5, clock=lambda: now[0])
    line.update("10 rows")
    assert err.getvalue() == ""  # a short run prints nothing
    now[0] = 1.2
    line.update("20 rows")
    now[0] = 1.3
    line.update("30 rows")  # within the interval: skipped
    now[0] = 2.0
    line.update("4 rows")
    assert err.getvalue() == "\racidctl: x: 20 rows (1 s)\racidctl: x: 4 rows (2 s) "  # shorter line padded
    line.done()
    assert err.getvalue().endswith("\r" + " " * len("acidctl: x: 4 rows (2 s)") + "\r")
    assert "\n" not in err.getvalue()


def run(*args):
    """acidctl in-process with stderr a terminal and stdout a pipe: (exit code, stdout, stderr)."""
    from acidctl.cli import main as climain

    buf = io.BytesIO()
    out = io.TextIOWrapper(buf, encoding="utf-8", newline="", write_through=True)
    err = Tty()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        climain.main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    finally:
        sys.stdout, sys.stderr = old
    return code, buf.getvalue().decode(), err.getvalue()


@pytest.mark.parametrize("argv", [["dump", "--merged"], ["dump", "--merged", "--count"]])
def test_merged_reads_show_progress_on_a_terminal_only(demo, monkeypatch, argv):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "INTERVAL", 0.0)
    code, out, err = run(*argv, "default.sales")
    assert code == 0, err
    assert "\racidctl: dump --merged" in err and " rows (" in err
    assert "\r" not in out and "rows (" not in out  # nothing of it on stdout
    assert err.endswith("\r")  # the line is cleared at the end
    if argv[-1] == "--merged":
        assert len(out.splitlines()) == 15  # the rows, untouched
    for quiet in (["-q"], ["-o", "json"]):
        code, out, err = run(*quiet, *argv, "default.sales")
        assert code == 0 and err == "", (quiet, err)
        if quiet == ["-o", "json"] and argv[-1] == "--count":
            assert json.loads(out)["rows"] == 15


def test_a_status_line_while_spark_starts():
    """Report #21: the Spark session start (seconds) was silent; a terminal gets a status line,
    cleared when the session is ready; JSON mode, -q and pipes get none."""
    import time

    from acidctl.compact import spark

    err = Tty()
    progress.spark_start_progress(settings(err=err))
    try:
        [listener] = [f for f in spark.START_LISTENERS if getattr(f, "acidctl_cli", False)]
        with listener("local[2]"):
            time.sleep(1.0)
        out = err.getvalue()
        assert "\racidctl: starting Spark (local[2]) (" in out
        assert out.endswith("\r")  # cleared
        for quiet in (settings(json_mode=True), settings(quiet=True), settings(err=io.StringIO())):
            progress.spark_start_progress(quiet)
            assert not [f for f in spark.START_LISTENERS if getattr(f, "acidctl_cli", False)]
    finally:
        spark.START_LISTENERS[:] = [f for f in spark.START_LISTENERS if not getattr(f, "acidctl_cli", False)]


def test_jvm_incubator_warning_is_dropped(capfd):
    """Report #21: Spark 4's JVM prints "WARNING: Using incubator modules: jdk.incubator.vector"
    on the stderr it inherits; a process started while the session starts keeps the filtered
    stderr: that line is dropped, every other line kept, this process's fd 2 restored."""
    import subprocess
    import threading
    import time

    from acidctl.compact.spark import _jvm_stderr_filtered

    with _jvm_stderr_filtered():
        subprocess.run(
            ["sh", "-c", "echo 'WARNING: Using incubator modules: jdk.incubator.vector' >&2; echo 'spark: kept' >&2"],
            check=True,
        )
    deadline = time.monotonic() + 5
    while any(t.name == "acidctl-jvm-stderr" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    err = capfd.readouterr().err
    assert "spark: kept" in err and "incubator" not in err
