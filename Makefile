# Two commands on a fresh machine: `make run` serves the API on the embedded defaults,
# `make test` runs the whole test suite. Both create .venv and install the project first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run practice screenshots test coverage unit lint bench bench-deposits bench-games bench-seamless bench-embedded deploy-check clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# BIND=HOST:PORT serves elsewhere (make run BIND=0.0.0.0:8000); default 127.0.0.1:8000.
# SEAMLESS=1 also runs the reference operator wallet and a demo operator in seamless mode.
run: $(STAMP)
	$(BIN)/gin-service run $(if $(BIND),--bind $(BIND)) $(if $(SEAMLESS),--seamless-demo)

# For a person at /play, while `make run` runs: a practice player's token (play money), a
# practice table of each game with bots in its other seats and practice tournaments with bots
# in their other entries; prints the link to open.
practice: $(STAMP)
	$(BIN)/gin-service practice $(if $(BIND),--url http://$(BIND))

# Screenshots of every page for people at 1366x768 and 390x844 in var/screenshots/ (not
# committed), on a run of its own.
screenshots: $(STAMP)
	$(BIN)/python -m tests.browser.screenshots var/screenshots

# The suite runs on TEST_PROCESSES pytest-xdist processes (auto: one per core, at most 4; 0: in
# this process alone), each with its own databases, var folder and broker queues. Work is shared
# out by stealing (a module's tests mostly stay on one process, keeping its fixtures set up once).
# Four processes on two cores gained nothing clear (pytest 13.5-15 min against 13-16 min with
# two, docs/testing.md), and each such run found a test that depended on which tests its
# process had run before it: the default stays at one per core.
TEST_PROCESSES ?= auto

test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_PROCESSES) --maxprocesses 4 --dist worksteal $(PYTEST_ARGS)

# The suite as `make test` runs it, with the branch coverage of service/, worker/ and
# refwallet/ printed at the end (the tests' own subprocesses, such as gunicorn and Celery
# workers, are not measured); its tracing makes CPU-bound tests three to four times slower.
coverage: $(STAMP)
	$(MAKE) test PYTEST_ARGS="--cov --cov-report=term $(PYTEST_ARGS)"

# The pure core alone (rules, formats, payouts, ledger postings): no database, no server, in
# seconds; hypothesis's quick profile unless HYPOTHESIS_PROFILE says otherwise.
unit: $(STAMP)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-quick} $(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/rules_speed.py

# Deposits/s through gunicorn + PostgreSQL beside a trivial endpoint (needs a PostgreSQL server;
# BENCH_DATABASE_URL or TEST_DATABASE_URL, default postgres@127.0.0.1:5432).
bench-deposits: $(STAMP)
	$(BIN)/python bench/deposits.py

# 4-player Rummy actions/s beside two-player Gin through gunicorn + PostgreSQL, and a finished
# Rummy match's settlement by a real Celery worker beside a Gin match's (needs PostgreSQL and
# Redis: BENCH_DATABASE_URL / TEST_DATABASE_URL, BENCH_BROKER_URL / TEST_BROKER_URL).
bench-games: $(STAMP)
	$(BIN)/python bench/games.py

# Seats/s for an operator in seamless wallet mode (stakes debited from the reference wallet
# process) beside one in transfer mode, and a resigned match's end-to-payout latency (the credit
# applied at the operator's wallet) beside the settlement's, through gunicorn + PostgreSQL and
# a real Celery worker (needs PostgreSQL and Redis: BENCH_DATABASE_URL / TEST_DATABASE_URL,
# BENCH_BROKER_URL / TEST_BROKER_URL).
bench-seamless: $(STAMP)
	$(BIN)/python bench/seamless.py

# On what `make run` starts (gin-service run: SQLite, the filesystem broker, a worker with beat):
# a match's end to its settlement readable and a per-hand Rummy hand's end to the next hand
# dealt, p50/p99, beside the same command on PostgreSQL and Redis when both answer
# (BENCH_DATABASE_URL / TEST_DATABASE_URL, BENCH_BROKER_URL / TEST_BROKER_URL).
bench-embedded: $(STAMP)
	$(BIN)/python bench/embedded.py

# The Dockerfile, compose file and Kubernetes manifests, checked offline (no Docker daemon or
# cluster needed): parsing, schema validation, the entrypoint and the builder's wheel.
deploy-check: $(STAMP)
	$(BIN)/python -m pytest tests/deploy $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis .mypy_cache .ruff_cache
