# The two entry points (see README.md): `make demo` and `make test`.
DEMO_DIR ?= demo-warehouse
ACIDCTL  = .venv/bin/acidctl

.PHONY: setup setup-test demo test lint bench docs clean-demo

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh --test

METASTORE = sqlite:///$(abspath $(DEMO_DIR))/metastore.db

# The main job on the embedded default: a fresh local warehouse recorded in a SQLite
# metastore, then acidctl on it.
demo: setup clean-demo
	$(ACIDCTL) demo $(DEMO_DIR)
	$(ACIDCTL) dump $(DEMO_DIR)/warehouse/employee
	$(ACIDCTL) dump --meta $(DEMO_DIR)/warehouse/employee/delta_0000002_0000002_0001/bucket_00000
	$(ACIDCTL) --metastore $(METASTORE) show transactions
	$(ACIDCTL) --metastore $(METASTORE) show locks
	$(ACIDCTL) --metastore $(METASTORE) show compactions
	$(ACIDCTL) --metastore $(METASTORE) show write-ids default.sales
	$(ACIDCTL) --metastore $(METASTORE) state default.sales
	$(ACIDCTL) --metastore $(METASTORE) dump --merged default.employee
	$(ACIDCTL) --metastore $(METASTORE) compact --due default.sales
	$(ACIDCTL) --metastore $(METASTORE) show compactions default.sales
	$(ACIDCTL) --metastore $(METASTORE) clean default.sales
	$(ACIDCTL) --metastore $(METASTORE) dump --merged default.sales

clean-demo:
	rm -rf $(DEMO_DIR)

test: setup-test lint
	ACIDCTL_REQUIRE_SERVERS=1 .venv/bin/python -m pytest -n 2 -q

# mypy checks the whole package (settings in pyproject.toml); new code stays typed and clean
MYPY_PATHS = acidctl

lint:
	.venv/bin/ruff check acidctl tests bench
	.venv/bin/ruff format --check acidctl tests bench
	.venv/bin/mypy $(MYPY_PATHS)

bench: setup
	.venv/bin/python bench/startup.py
	.venv/bin/python bench/dump.py
	.venv/bin/python bench/state.py
	.venv/bin/python bench/compact.py --rows 2000000

# Regenerate man/acidctl.1 and completions/ from the CLI (a test fails when they are stale).
docs:
	.venv/bin/python -m acidctl.cli.docgen
