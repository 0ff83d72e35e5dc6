# README command 1: `make run`; README command 2: `make test`. Both create the virtualenv and
# install requirements.txt when needed, so they work from a fresh clone.

VENV := .venv
PY := $(VENV)/bin/python
PYTHON ?= $(shell command -v python3.11 || command -v python3)
STAMP := $(VENV)/.requirements.stamp
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: venv run test check-services browser

venv: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall only when requirements.txt is newer than the stamp of the last install.
$(STAMP): requirements.txt | $(PY)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	touch $@

check-services: venv
	$(PY) manage.py check_services

run: check-services
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	$(PY) scripts/run_dev.py --host $(HOST) --port $(PORT)

# The browser tests drive Debian's Chromium (Playwright's own download needs the internet).
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ -x "$(CHROMIUM)" ]; then :; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "make: $(CHROMIUM) missing and not root: browser tests skip (apt-get install chromium)"; \
	elif ! command -v apt-get >/dev/null; then \
		echo "make: $(CHROMIUM) missing and no apt-get here: browser tests skip"; \
	else \
		apt-get install -y -q chromium >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; } || \
		echo "make: could not install chromium with apt-get: browser tests skip"; \
	fi

test: check-services browser
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run
	$(VENV)/bin/ruff check .
	$(PY) -m pytest
