# pimcloud: the two commands of the project.
#   make quickstart   set up this machine, then run the main job (a small campaign + report)
#   make test         set up this machine, then run every test that can run here
# Debian packages come from each folder's apt-packages.txt; Python packages from PyPI.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BUILD := build
APT_LISTS := $(sort $(wildcard */apt-packages.txt */*/apt-packages.txt))

.PHONY: setup apt python cxx test test-python test-cxx lint quickstart clean

setup: apt python

apt:
	@pkgs=$$(cat $(APT_LISTS) | sed 's/#.*//' | tr -s ' \n' ' '); \
	missing=$$(for p in $$pkgs; do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  SUDO=$$( [ $$(id -u) -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

python: $(VENV)/.installed

# Debian's SQLite source, for oltp (guest/sqlite_source.py), is made once into the cache.
cxx: apt python
	sqlite=$$($(PY) -m pimcloud.guest.sqlite_source) && \
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DPIMCLOUD_SQLITE_DIR="$$sqlite" >/dev/null
	cmake --build $(BUILD)

test-cxx: cxx
	ctest --test-dir $(BUILD) --output-on-failure

test-python: setup cxx
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest

test: test-cxx test-python

quickstart: setup cxx
	$(VENV)/bin/pimcloud quickstart

clean:
	rm -rf $(BUILD)
