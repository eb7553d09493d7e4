# Two commands do all set-up on a fresh machine:
#   make up     install everything, then run the local deployment (regions + edge) in the foreground
#   make test   install everything, then lint, type-check and run the whole test suite
# While developing: make test-fast (lint, types and the tests that need no model: under a minute).
# Both are idempotent: models and runtimes are cached per user (~/.cache/voicemesh).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
# haproxy: the local front door; prometheus (and promtool): `voicemesh up`'s metrics and the rules' tests; podman buildah mmdebstrap umoci skopeo uidmap: `make image` and its test (docs/image.md)
APT_PACKAGES := espeak-ng sox redis-server chromium haproxy prometheus podman buildah mmdebstrap umoci skopeo uidmap
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup system-packages python-env models up down test test-fast lint typecheck pytest pytest-fast bench clean \
        bench-setup bench-e2e image

setup: system-packages python-env models

system-packages:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "› installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null \
	    || { echo "error: apt-get could not install$$missing; install them by hand and re-run"; exit 1; }; \
	fi
	@# Debian's prometheus starts a service of its own: `voicemesh up` runs its own (config and data in the state dir).
	@if [ -d /run/systemd/system ] && systemctl is-enabled --quiet prometheus 2>/dev/null; then \
	  $(SUDO) systemctl disable --now prometheus >/dev/null 2>&1 || true; fi

python-env: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@echo "› creating $(VENV) and installing voicemesh with its dev tools"
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --quiet --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
	@$(BIN)/pip install --quiet -e '.[dev]' 2>&1 | grep -v "^WARNING: Location" || true
	@$(BIN)/python -c "import voicemesh, litestar, faster_whisper, kokoro_onnx, piper" \
	  || { echo "error: the Python install failed; see pip's output above"; exit 1; }
	@touch $@

models: python-env
	@$(BIN)/voicemesh models fetch

# `voicemesh bench e2e` compares voicemesh with a stock Pipecat pipeline: its extra adds Pipecat's
# Whisper, Kokoro and OpenAI services (no torch). BENCH_ARGS, e.g. "--callers 1 --passes 2".
bench-setup: python-env
	@echo "› installing the bench extra (stock Pipecat with Whisper, Kokoro, OpenAI)"
	@$(BIN)/pip install --quiet -e '.[dev,bench]' 2>&1 | grep -v "^WARNING: Location" || true
	@$(BIN)/python -c "import pipecat.services.whisper.stt, pipecat.services.kokoro.tts" \
	  || { echo "error: the bench extra did not install; see pip's output above"; exit 1; }

bench-e2e: setup bench-setup
	$(BIN)/voicemesh bench e2e $(BENCH_ARGS)

# The container image, offline (Debian's packages and PyPI): localhost/voicemesh:<version> and
# dist/voicemesh-<version>.oci.tar (docs/image.md).
image: system-packages python-env
	$(BIN)/voicemesh image build

up: setup
	$(BIN)/voicemesh up

down: python-env
	$(BIN)/voicemesh down

lint: python-env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/deptry .
	$(BIN)/lint-imports --no-cache

typecheck: python-env
	$(BIN)/mypy

pytest: setup
	$(BIN)/pytest -ra --durations=25 $(PYTEST_ARGS)

pytest-fast: python-env
	$(BIN)/pytest -ra -m "not slow" $(PYTEST_ARGS)

test: setup lint typecheck pytest

test-fast: lint typecheck pytest-fast

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
