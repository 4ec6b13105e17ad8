"""Random sequences of acidctl commands and Hive steps on a :class:`Warehouse`, with the rules
of issue 21 ("one system that never harms the cluster") as separate checks.

A scenario is a Hive version, an initial history (tests/histories.py) and a list of steps.
:func:`play` runs the steps in order; around every step each active :class:`Check` looks at
the warehouse before and after and records violations (``Check.violations``), so each rule is
one test (tests/property/test_no_harm.py), reported on its own.

Steps (``kind`` first):

* ``compact``: ``compact [--major|--minor|--due] db.t[/p=K]`` (default engine, sometimes
  ``--allow-non-atomic-publish``, sometimes ``--dry-run``);
* ``interrupt``: the same, Ctrl-C'd at ``task-before-write`` (``ACIDCTL_TEST_CRASH_AT=int:...``);
* ``enqueue``: ``compact --enqueue [--major|--minor] db.t[/p=K]`` (sometimes ``--dry-run``);
* ``worker``: ``worker --once --engine local`` (sometimes ``--allow-non-atomic-publish``);
* ``interrupt_worker``: the same, Ctrl-C'd while its first request runs (it finishes that one
  and hands the rest back);
* ``initiator``: ``initiator --once`` (sometimes ``--dry-run``);
* ``clean``: ``clean db.t --execute --min-age 0`` (or the dry run);
* ``revert``: ``revert db.t --execute`` (or the dry run);
* ``abort_txns``: ``abort transactions ID [--execute]``: an open txn (or an id that is none);
* ``abort_cqs``: ``abort compactions ID [--execute]``: a queued request (or an unknown id);
* ``unlock``: ``unlock ID [--dry-run]``: a lock of the table (or an unknown id);
* ``hive_write``: a Hive write (committed / aborted / open) — the model changes with it;
* ``hive_lock``: a Hive reader's SHARED_READ lock outside any txn;
* ``hive_claim``: Hive's Worker claims an initiated request (conditional update);
* ``hive_fail``: Hive's Worker marks a request it claimed failed.

Every step that is not Hive's is an acidctl command; "refused" = a non-zero exit.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from pathlib import Path

from hypothesis import strategies as st

from tests.histories import Statement, Txn
from tests.property.warehouse import NAME, Warehouse, normalise_output

MODES = ("major", "minor", "due")


@dataclasses.dataclass(frozen=True)
class Step:
    kind: str
    mode: str = "major"
    part: int = 0  # partition index (mod the number of partitions)
    flag: bool = False  # --dry-run / not --execute, depending on the step
    non_atomic: bool = False
    pick: int = 0
    txn: Txn | None = None

    def __repr__(self) -> str:  # short, for hypothesis' falsifying examples
        f = [self.kind]
        if self.kind in ("compact", "interrupt", "enqueue"):
            f += [self.mode, f"part={self.part}"]
        if self.flag:
            f.append("dry-run")
        if self.non_atomic:
            f.append("non-atomic")
        if self.kind in ("abort_txns", "abort_cqs", "unlock", "hive_claim", "hive_fail"):
            f.append(f"pick={self.pick}")
        if self.txn is not None:
            f.append(repr(self.txn))
        return "Step(" + " ".join(f) + ")"


@dataclasses.dataclass
class Scenario:
    hive_version: int
    history: object
    steps: list[Step]


# -- strategies ---------------------------------------------------------------------------
_values = st.lists(st.integers(0, 1000), min_size=1, max_size=4)
_statements = st.builds(
    Statement,
    kind=st.sampled_from(["insert", "insert", "delete", "update"]),
    values=_values,
    picks=st.lists(st.integers(0, 50), min_size=1, max_size=2),
    part=st.integers(0, 2),
)
txns = st.builds(
    Txn,
    state=st.sampled_from(["committed", "committed", "committed", "aborted", "open"]),
    statements=st.lists(_statements, min_size=1, max_size=2),
)


def _history():
    from tests.histories import History

    return st.builds(
        History,
        buckets=st.integers(1, 2),
        originals=st.one_of(st.just([]), st.just([]), st.lists(st.integers(0, 1000), min_size=1, max_size=3)),
        txns=st.lists(txns, min_size=1, max_size=5),
        partitions=st.sampled_from([1, 2, 2, 3]),
    )


_part = st.integers(0, 2)
_compact = st.builds(
    Step,
    kind=st.just("compact"),
    mode=st.sampled_from(MODES),
    part=_part,
    flag=st.sampled_from([False, False, False, True]),
    non_atomic=st.booleans(),
)
_worker = st.builds(Step, kind=st.just("worker"), non_atomic=st.booleans())
_clean = st.builds(Step, kind=st.just("clean"), flag=st.sampled_from([False, False, True]))
steps = st.one_of(
    _compact,
    _compact,
    _compact,
    _worker,
    _clean,
    _clean,
    st.builds(Step, kind=st.just("interrupt"), mode=st.sampled_from(("major", "minor")), part=_part),
    st.builds(Step, kind=st.just("enqueue"), mode=st.sampled_from(("major", "minor")), part=_part, flag=st.booleans()),
    st.builds(Step, kind=st.just("interrupt_worker")),
    st.builds(Step, kind=st.just("initiator"), flag=st.booleans()),
    st.builds(Step, kind=st.just("revert"), flag=st.booleans()),
    st.builds(Step, kind=st.just("abort_txns"), pick=st.integers(0, 5), flag=st.booleans()),
    st.builds(Step, kind=st.just("abort_cqs"), pick=st.integers(0, 5), flag=st.booleans()),
    st.builds(Step, kind=st.just("unlock"), pick=st.integers(0, 5), flag=st.booleans()),
    st.builds(Step, kind=st.just("hive_write"), txn=txns),
    st.builds(Step, kind=st.just("hive_lock")),
    st.builds(Step, kind=st.just("hive_claim"), pick=st.integers(0, 5)),
    st.builds(Step, kind=st.just("hive_fail"), pick=st.integers(0, 5)),
)


def scenarios(hive_versions=(3, 4), max_steps: int = 6):
    return st.builds(
        Scenario,
        hive_version=st.sampled_from(hive_versions),
        history=_history(),
        steps=st.lists(steps, min_size=2, max_size=max_steps),
    )


# -- running one step ---------------------------------------------------------------------
@dataclasses.dataclass
class Outcome:
    step: Step
    argv: list[str] | None  # None: a Hive step
    code: int = 0
    stdout: str = ""
    stderr: str = ""
    dry_run: bool = False
    interrupted: bool = False
    part: str | None = None  # the partition a compact step targeted

    @property
    def acidctl(self) -> bool:
        return self.argv is not None

    @property
    def refused(self) -> bool:
        return self.acidctl and self.code != 0

    def describe(self) -> str:
        if not self.acidctl:
            return repr(self.step)
        err = self.stderr.strip().splitlines()[-1:] if self.stderr.strip() else []
        return f"acidctl {shlex.join(self.argv)} -> exit {self.code}{': ' + err[0] if err else ''}"


def _lock_ids(wh: Warehouse) -> list[int]:
    import sqlalchemy as sa

    h = wh.T.HIVE_LOCKS
    with wh.rec.engine.connect() as c:
        return sorted({int(r[0]) for r in c.execute(sa.select(h.HL_LOCK_EXT_ID))})


def command_for(wh: Warehouse, step: Step) -> tuple[list[str] | None, dict, str | None]:
    """The acidctl argv (None for Hive steps), extra environment, targeted partition."""
    part = wh.parts[step.part % len(wh.parts)]
    target = wh.spec(part)
    k = step.kind
    if k in ("compact", "interrupt"):
        argv = ["compact", f"--{step.mode}", target]
        if step.non_atomic:
            argv.append("--allow-non-atomic-publish")
        if k == "compact" and step.flag:
            argv.append("--dry-run")
        env = {"ACIDCTL_TEST_CRASH_AT": "int:task-before-write"} if k == "interrupt" else {}
        return argv, env, part
    if k == "enqueue":
        argv = ["compact", "--enqueue", f"--{step.mode}", target]
        return argv + (["--dry-run"] if step.flag else []), {}, part
    if k == "interrupt_worker":
        # Ctrl-C while the first request runs: worker --once finishes it, hands back the rest
        return (
            ["worker", "--once", "--engine", "local"],
            {"ACIDCTL_TEST_CRASH_AT": "int:task-before-write"},
            None,
        )
    if k == "worker":
        return (
            ["-o", "json", "worker", "--once", "--engine", "local"]
            + (["--allow-non-atomic-publish"] if step.non_atomic else []),
            {},
            None,
        )
    if k == "initiator":
        return ["initiator", "--once"] + (["--dry-run"] if step.flag else []), {}, None
    if k == "clean":
        return ["clean", NAME, "--min-age", "0"] + ([] if step.flag else ["--execute"]), {}, None
    if k == "revert":
        return ["revert", NAME] + ([] if step.flag else ["--execute"]), {}, None
    if k == "abort_txns":
        ids = wh.open_txns()
        tid = ids[step.pick % len(ids)] if ids and step.pick < 4 else 999_999
        return ["abort", "transactions", str(tid)] + ([] if step.flag else ["--execute"]), {}, None
    if k == "abort_cqs":
        ids = [r[0] for r in wh.queue_rows()]
        cq = ids[step.pick % len(ids)] if ids and step.pick < 4 else 999_999
        return ["abort", "compactions", str(cq)] + ([] if step.flag else ["--execute"]), {}, None
    if k == "unlock":
        ids = _lock_ids(wh)
        lid = ids[step.pick % len(ids)] if ids and step.pick < 4 else 999_999
        return ["unlock", str(lid)] + (["--dry-run"] if step.flag else []), {}, None
    return None, {}, part


def is_dry_run(step: Step) -> bool:
    return step.flag and step.kind in (
        "compact",
        "enqueue",
        "initiator",
        "clean",
        "revert",
        "abort_txns",
        "abort_cqs",
        "unlock",
    )


def run_step(wh: Warehouse, step: Step) -> Outcome:
    argv, env, part = command_for(wh, step)
    if argv is None:
        if step.kind == "hive_write":
            wh.hive_write(step.txn)
        elif step.kind == "hive_lock":
            wh.hive_reader_lock()
        elif step.kind == "hive_claim":
            wh.hive_claim(step.pick)
        elif step.kind == "hive_fail":
            wh.hive_fail(step.pick)
        return Outcome(step, None, part=part)
    r = wh.cli(*argv, env=env)
    out = Outcome(
        step,
        argv,
        r.code,
        r.stdout,
        r.stderr,
        dry_run=is_dry_run(step),
        interrupted=step.kind == "interrupt" and r.code == 130,
        part=part,
    )
    wh.sync_txn_states()
    return out


# -- checks -------------------------------------------------------------------------------
class Check:
    """One rule: ``before`` sees the warehouse before a step, ``after`` after it."""

    name = "?"

    def __init__(self):
        self.violations: list[str] = []

    def start(self, wh: Warehouse) -> None:
        pass

    def before(self, wh: Warehouse, step: Step) -> None:
        pass

    def after(self, wh: Warehouse, out: Outcome) -> None:
        pass

    def finish(self, wh: Warehouse) -> None:
        pass

    def fail(self, out: Outcome | None, msg: str) -> None:
        self.violations.append((out.describe() + ": " if out is not None else "") + msg)


def play(wh: Warehouse, scenario_steps, checks: list[Check], log: list[str] | None = None) -> None:
    for c in checks:
        c.start(wh)
    for step in scenario_steps:
        for c in checks:
            c.before(wh, step)
        out = run_step(wh, step)
        if log is not None:
            log.append(out.describe())
        for c in checks:
            c.after(wh, out)
    for c in checks:
        c.finish(wh)


def scratch_url(root: Path) -> str:
    return f"sqlite:///{root}/metastore.db"


def umask_022():
    """Context: the process umask 022 (what rule 5's 0644/0755 is worked out for)."""
    import contextlib

    @contextlib.contextmanager
    def cm():
        old = os.umask(0o022)
        try:
            yield
        finally:
            os.umask(old)

    return cm()


__all__ = ["Check", "Outcome", "Scenario", "Step", "Warehouse", "normalise_output", "play", "scenarios"]
