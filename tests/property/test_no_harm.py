"""Property test of issue 21 ("one system that never harms the cluster"): random warehouses
(Hive 3 and Hive 4; SQLite, and a smaller run on the PostgreSQL and MariaDB servers of
tests/metastore/conftest.py) and random sequences of acidctl commands and Hive steps
(tests/property/harness.py), with each rule checked after every step as its own test
(tests/property/rules.py), so each rule is reported on its own.

Default: a few derandomized examples per rule, no shrinking (about a minute on 2 cores).
``ACIDCTL_PROPERTY_EXAMPLES=N`` runs N examples per rule (random, with shrinking) — e.g. 200
for a long run; ``ACIDCTL_PROPERTY_SHRINK=1`` shrinks failures in the default run too.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings

from tests.histories import History, Statement, Txn
from tests.property.harness import Scenario, Step, play, scenarios, scratch_url, umask_022
from tests.property.rules import ALL_CHECKS
from tests.property.warehouse import Warehouse

LONG = int(os.environ.get("ACIDCTL_PROPERTY_EXAMPLES", "0"))
SHRINK = LONG > 0 or os.environ.get("ACIDCTL_PROPERTY_SHRINK") == "1"
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if SHRINK else [])


def _settings(default_examples: int):
    return settings(
        max_examples=LONG or default_examples,
        deadline=None,
        derandomize=not LONG,
        database=None,
        phases=PHASES,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


#: one entry per rule (issue 21)
RULES = [
    pytest.param("why", id="rule1-why-predicts-compact-and-clean"),
    pytest.param("doctor-harm", id="rule2-doctor-reports-no-harm"),
    pytest.param("doctor-fixes", id="rule2-doctor-fixes-converge"),
    pytest.param("refusals", id="rule3-refusals-leave-no-trace"),
    pytest.param("modes", id="rule5-files-follow-umask"),
    pytest.param("reader", id="reader-sees-the-model"),
]


def _known(hive_version: int) -> Scenario:
    """A scenario that meets every case of issue 21's "What was seen" that a sequence can show:
    a partition compacted below the table's high-water mark (output name vs
    CQ_HIGHEST_WRITE_ID), an aborted delta for clean, a dry-run enqueue, two interrupted
    compactions, a revert, a queued request for the worker. Run as an explicit example of
    every rule, before the random ones."""
    ins = lambda part, *v: Statement("insert", list(v), [0], part)  # noqa: E731
    history = History(
        buckets=2,
        originals=[],
        txns=[
            Txn("committed", [ins(0, 1, 2)]),
            Txn("committed", [ins(0, 3)]),
            Txn("aborted", [ins(0, 4)]),
            Txn("committed", [ins(1, 5), ins(1, 6)]),
            Txn("committed", [Statement("delete", [], [0], 1)]),
            Txn("open", [ins(1, 7)]),
        ],
        partitions=2,
    )
    steps = [
        Step("compact", "major", 0),
        Step("clean"),
        Step("enqueue", "major", 1, flag=True),
        Step("interrupt", "major", 1),
        Step("interrupt", "major", 1),
        Step("revert"),
        Step("enqueue", "major", 1),
        Step("worker"),
        Step("clean"),
    ]
    return Scenario(hive_version, history, steps)


def check_scenario(url: str, root: Path, scenario, rule: str) -> None:
    with umask_022():
        wh = Warehouse(root, url, scenario.hive_version, scenario.history)
        try:
            check = ALL_CHECKS[rule]()
            log: list[str] = []
            play(wh, scenario.steps, [check], log)
        finally:
            wh.rec.engine.dispose()
    if check.violations:
        raise AssertionError(
            f"{check.name}: {len(check.violations)} violation(s)\n  "
            + "\n  ".join(check.violations)
            + f"\nHive {scenario.hive_version}, history {scenario.history!r}\nsteps:\n  "
            + "\n  ".join(log)
        )


@pytest.mark.parametrize("rule", RULES)
def test_rule_on_sqlite(rule):
    @_settings(8)
    @given(scenario=scenarios())
    @example(scenario=_known(3))
    @example(scenario=_known(4))
    def run(scenario):
        with tempfile.TemporaryDirectory() as d:
            check_scenario(scratch_url(Path(d)), Path(d), scenario, rule)

    run()


SERVERS = [
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql),
]


@pytest.mark.parametrize("backend", SERVERS)
@pytest.mark.parametrize("rule", RULES)
def test_rule_on_server(rule, backend, request):
    """The smaller run: the same rules on a real PostgreSQL / MariaDB metastore."""
    from tests.metastore.conftest import my_create_db, pg_create_db

    info = request.getfixturevalue("pg_server" if backend == "postgres" else "mysql_server")
    create = pg_create_db if backend == "postgres" else my_create_db

    @_settings(2)
    @given(scenario=scenarios(max_steps=4))
    @example(scenario=_known(4))
    def run(scenario):
        with tempfile.TemporaryDirectory() as d:
            check_scenario(create(info), Path(d), scenario, rule)

    run()
