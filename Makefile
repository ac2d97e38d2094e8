# Every target sets itself up: a fresh machine needs only Python 3.11 and the package registries.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test test-browser test-tmux test-heavy interop demo bench bench-quick lint soak soak-hosts clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# compat: the checkout goes on sys.path through a plain .pth line. The default editable mode
# installs an import finder that every Python start-up loads and runs: a good share of a
# quick command's start-up (see the README's "The floor").
$(STAMP): $(BIN)/python pyproject.toml Makefile
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,bench,engine,browser]' --config-settings editable_mode=compat
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The dashboard in a real headless Chromium: Debian's chromium and its driver, installed
# here when missing (as root, or through sudo), and Selenium (the `browser` extra, installed with the rest).
test-browser: $(STAMP)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium chromium-driver; }
	$(BIN)/python -m pytest -q -m browser

test-tmux: $(STAMP)
	$(BIN)/python -m pytest -q -m tmux

# Every benchmark suite in its quick mode (so the benchmark code cannot rot) and the
# 30-second soak: kept out of `make test` for its time budget; CI runs both.
test-heavy: $(STAMP)
	$(BIN)/python -m pytest -q -m heavy

interop: $(STAMP)
	$(BIN)/python -m pytest -q -m interop

demo: $(STAMP)
	$(BIN)/agentteams demo

bench: $(STAMP)
	$(BIN)/agentteams bench all

bench-quick: $(STAMP)
	$(BIN)/agentteams bench all --quick

soak: $(STAMP)
	$(BIN)/python tests/reliability/soak.py --seconds $${SOAK_SECONDS:-600} \
		--json benchmarks/results/soak-$${SOAK_SECONDS:-600}s.json --plot benchmarks/results/soak-$${SOAK_SECONDS:-600}s.png

# One team across two hosts (two supervisors on this machine) on a real nats-server that is
# killed and restarted during the run: lost / duplicated / stuck counts.
soak-hosts: $(STAMP)
	$(BIN)/python tests/reliability/soak_hosts.py --seconds $${SOAK_SECONDS:-300} \
		--json benchmarks/results/soak-hosts-$${SOAK_SECONDS:-300}s.json

lint: $(STAMP)
	$(BIN)/ruff check ipc supervisor agentproc tests benchmarks
	$(BIN)/ruff format --check ipc supervisor agentproc tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info
