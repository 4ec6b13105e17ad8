# The two entry points (see README.md): `make demo` and `make test`.
DEMO_DIR ?= demo-warehouse
ACIDCTL  = .venv/bin/acidctl

.PHONY: setup setup-test demo test lint bench docs readme clean-demo

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh --test

METASTORE = sqlite:///$(abspath $(DEMO_DIR))/metastore.db

# The main job on the embedded default: a fresh local warehouse recorded in a SQLite
# metastore, then acidctl on it, ending with a compaction and the clean that follows it.
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
	$(ACIDCTL) --metastore $(METASTORE) clean default.sales --min-age 0
	$(ACIDCTL) --metastore $(METASTORE) clean default.sales --min-age 0 --execute
	$(ACIDCTL) --metastore $(METASTORE) dump --merged --count default.sales
	@echo
	@echo "Try it yourself (README.md, 'A tour on the demo warehouse'):"
	@echo "  export ACIDCTL_METASTORE_URL=$(METASTORE)"
	@echo "  $(ACIDCTL) doctor"

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

# Regenerate man/ (acidctl.1 and a page per command) and completions/ from the CLI and
# docs/commands/ (tests/cli/test_docs.py fails when they are stale).
docs:
	.venv/bin/python -m acidctl.cli.docgen

# Re-run the console examples of README.md and docs/**/*.md on a fresh demo and rewrite their
# output (review the diff; tests/cli/test_docs.py runs them and fails when one differs), then
# the man pages, which show them.
readme:
	.venv/bin/python -m tests.readme_examples --update
	.venv/bin/python -m acidctl.cli.docgen
