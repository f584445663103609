# ccbench: two targets.
#   make example   build and install ccbench, then run scenarios/example.toml
#   make test      install ccbench in editable mode with test extras, run cargo and pytest
# Both are idempotent; Cargo's build cache in target/ keeps repeat runs fast.

PYTHON ?= python3
PIP := $(PYTHON) -m pip install --disable-pip-version-check --no-input --progress-bar off --root-user-action=ignore
# Where pip puts console scripts for this interpreter (pyenv shims may lag behind).
SCRIPTS := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("scripts"))')

.PHONY: example test

example:
	$(PIP) .
	$(SCRIPTS)/ccbench run scenarios/example.toml

test:
	$(PIP) -e '.[test]'
	cargo test --workspace --release
	$(PYTHON) -m pytest -q
