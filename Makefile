# Kiln - see README.md. `make` builds bin/kiln; `make check` runs every test.
CC        ?= cc
# The core (spec parser, sandbox runner, CLI) and the document writers link
# against different libraries: the writers' are loaded only when a document
# is rendered (artifacts/writers_dl.c says why).
CORE_PKGS   := jansson md4c zlib libseccomp nettle
WRITER_PKGS := xlsxwriter libzip libxml-2.0 zlib libhpdf freetype2 libpng fribidi
# The HTTP service (service/, and its front end cli/serve.c) is built into
# kiln-service.so, loaded only by `kiln serve`: libmicrohttpd brings GnuTLS,
# which `kiln run`'s start-up should not pay for (cli/kiln.c, cmd_serve).
SERVICE_PKGS := sqlite3 nettle libmicrohttpd
PKGS        := $(sort $(CORE_PKGS) $(WRITER_PKGS) $(SERVICE_PKGS))
# Debian 12's libhpdf-dev ships no .pc file: mk/ holds one, searched after the
# system's. (Set on the command, since make 4.3 does not export to $(shell).)
PKG_CONFIG := PKG_CONFIG_PATH=$(if $(PKG_CONFIG_PATH),$(PKG_CONFIG_PATH):)$(CURDIR)/mk pkg-config
export PKG_CONFIG_PATH := $(if $(PKG_CONFIG_PATH),$(PKG_CONFIG_PATH):)$(CURDIR)/mk
BUILD     ?= build
BIN       := bin/kiln
PYTHON    := /usr/bin/python3

WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2
OPT       ?= -O2 -g
# -fPIC: the writer objects also go into a shared object.
CFLAGS    += $(OPT) -std=c11 -D_GNU_SOURCE -fPIC $(WARN) -I. $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
LDLIBS    += $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -lm
CORE_LDLIBS   := $(shell $(PKG_CONFIG) --libs $(CORE_PKGS) 2>/dev/null) -lm
WRITER_LDLIBS := $(shell $(PKG_CONFIG) --libs $(WRITER_PKGS) 2>/dev/null) -lm
SERVICE_LDLIBS := $(shell $(PKG_CONFIG) --libs $(SERVICE_PKGS) 2>/dev/null) -lpthread

# libkiln.a holds everything, the writers linked in (writers_static.c): the
# unit tests, the fuzzers and the benchmarks' helpers use it. The kiln
# executable is the core (libkiln-core.a, with writers_dl.c) plus
# kiln-writers.so beside it.
LIB_SRCS  := $(sort $(filter-out artifacts/writers_dl.c,$(wildcard common/*.c artifacts/*.c artifacts/spec/*.c artifacts/layout/*.c \
	artifacts/xlsx/*.c artifacts/opc/*.c artifacts/docx/*.c artifacts/pdf/*.c \
	artifacts/pptx/*.c contract/*.c exec/*.c batch/*.c mcp/*.c service/*.c)))
WRITER_SRCS := $(sort $(wildcard artifacts/writers.c artifacts/xlsx/*.c artifacts/opc/*.c \
	artifacts/docx/*.c artifacts/pdf/*.c artifacts/pptx/*.c))
SERVICE_SRCS := $(sort $(wildcard service/*.c))
CORE_SRCS := $(filter-out $(WRITER_SRCS) $(SERVICE_SRCS) artifacts/writers_static.c,$(LIB_SRCS)) \
	artifacts/writers_dl.c
SERVE_SRCS := $(wildcard cli/serve.c)
CLI_SRCS  := $(filter-out $(SERVE_SRCS),$(sort $(wildcard cli/*.c)))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/%.o)
WRITER_OBJS := $(WRITER_SRCS:%.c=$(BUILD)/%.o)
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o)
WRITERS_SO := $(dir $(BIN))kiln-writers.so
SERVICE_OBJS := $(SERVICE_SRCS:%.c=$(BUILD)/%.o) $(SERVE_SRCS:%.c=$(BUILD)/%.o)
SERVICE_SO := $(dir $(BIN))kiln-service.so
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TEMPLATES := $(shell find templates -type f) exec/python/kiln.py exec/python/kiln_session.py docs/tools/mcp.json

.PHONY: all deps check unit unit-bins e2e asan asan-bins fuzz fuzz-check fuzz-corpus fuzz-targets format format-check bench samples demo serve tools clean
all: $(BIN)

$(BUILD)/libkiln.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libkiln-core.a: $(CORE_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(WRITERS_SO): $(WRITER_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -o $@ $^ $(WRITER_LDLIBS)

$(SERVICE_SO): $(SERVICE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -o $@ $^ $(SERVICE_LDLIBS)

# Every core object goes in (--whole-archive) and is exported (-rdynamic):
# kiln-writers.so and kiln-service.so resolve their calls into the core
# against the executable.
$(BIN): $(CLI_OBJS) $(BUILD)/libkiln-core.a $(WRITERS_SO) $(SERVICE_SO)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -rdynamic -o $@ $(CLI_OBJS) \
		-Wl,--whole-archive $(BUILD)/libkiln-core.a -Wl,--no-whole-archive $(CORE_LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# The zygote (exec/zygote.c) loads libpython with dlopen: its file name
# comes from Debian's python3-embed (libpython3.11-dev, in DEB_PKGS).
PY_EMBED_LIB := $(shell $(PKG_CONFIG) --variable=libdir python3-embed 2>/dev/null)/libpython$(shell $(PKG_CONFIG) --modversion python3-embed 2>/dev/null).so.1.0
$(BUILD)/exec/zygote.o: CFLAGS += -DKILN_LIBPYTHON='"$(PY_EMBED_LIB)"'

# The templates are pulled in by .incbin, which -MMD cannot see.
$(BUILD)/common/templates.o: $(TEMPLATES)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libkiln.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libkiln.a $(LDLIBS) $(shell pkg-config --libs cmocka 2>/dev/null)

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(SERVICE_OBJS:.o=.d) $(BUILD)/artifacts/writers_dl.d

# Debian packages for the build, the tests, the demo and the benchmark. The
# fonts are the ones LibreOffice sets Kiln's documents in during the tests:
# Carlito for Calibri, DejaVu (with its italic and light faces, in -extra)
# for the rest; the docx TOC page-estimate test is measured against them.
DEB_PKGS := build-essential pkg-config libjansson-dev libxlsxwriter-dev libmd4c-dev \
	libzip-dev libxml2-dev zlib1g-dev python3-docx libreoffice-writer-nogui libreoffice-impress-nogui \
	libcmocka-dev clang libclang-rt-14-dev python3 python3-openpyxl python3-xlsxwriter \
	python3-jsonschema python3-lxml python3-pytest libxml2-utils libreoffice-calc-nogui \
	python3-pil poppler-utils fonts-dejavu-core fonts-dejavu-extra fonts-crosextra-carlito \
	time unzip libhpdf-dev libfreetype-dev libpng-dev qpdf python3-pypdf python3-reportlab \
	fonts-wqy-zenhei python3-fonttools libfribidi-dev libseccomp-dev nettle-dev bubblewrap libsqlite3-dev \
	libmicrohttpd-dev curl jq wrk nginx-light clang-format \
	python3-numpy python3-pandas python3-matplotlib python3-pytest-xdist libpython3.11-dev \
	python3-ipykernel python3-jupyter-client python3-ipython
# The real MCP clients the tests drive Kiln with (tests/e2e/test_mcp_clients.py): the
# official TypeScript SDK and the Inspector CLI, pinned in tests/mcp/package-lock.json.
# npm ci runs only when the lock file is newer than the tree it installed (npm writes
# node_modules/.package-lock.json), so a second `make deps` does nothing.
MCP_NODE_STAMP := tests/mcp/node_modules/.package-lock.json
$(MCP_NODE_STAMP): tests/mcp/package.json tests/mcp/package-lock.json
	@command -v npm >/dev/null || { echo "make deps: no npm here: installing Debian's nodejs and npm"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends nodejs npm; }
	npm ci --prefix tests/mcp --no-audit --no-fund
	touch $@

deps: $(MCP_NODE_STAMP)
	@missing=$$(for p in $(DEB_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
		| grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		echo "installing:$$missing"; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	else echo "make deps: all packages present"; fi

samples:
	$(PYTHON) samples/make_data.py

# docs/tools/ (the MCP tools, the OpenAI and Anthropic tool definitions, the compact
# spec schema) from their one source, tools/definitions.py (docs/tools/README.md);
# tests/e2e/test_tools.py fails when the committed files differ from what this makes.
tools:
	$(PYTHON) tools/make_tools.py

# The main job for now: render every sample into out/ in every format, and
# list what it made. A file in DEMO_REFUSED is one Kiln refuses by design, and
# the demo shows that refusal (exit 3) instead: the 200,000-row export would
# take some 15,000 slides, past the deck's 5,000-slide limit.
DEMO_FORMATS := xlsx docx pptx pdf
DEMO_REFUSED := export_200k.pptx
demo: $(BIN) samples
	@mkdir -p out
	@for s in samples/*.json; do n=$$(basename $$s .json); \
		for f in $(DEMO_FORMATS); do \
			if echo " $(DEMO_REFUSED) " | grep -q " $$n.$$f "; then \
				echo "demo: out/$$n.$$f is refused by design (DEMO_REFUSED in the Makefile):"; \
				$(BIN) render $$s -o out/$$n.$$f; test $$? -eq 3 || exit 1; \
			else $(BIN) render $$s -o out/$$n.$$f || exit 1; fi; done; done
	@mkdir -p out/jobs
	@for j in samples/jobs/*.py; do n=$$(basename $$j .py); \
		echo "demo: kiln run --render $$j -> out/jobs/ (result in out/jobs/$$n.result.json)"; \
		$(BIN) run --render -o out/jobs -i samples/jobs/data/sales.csv \
			-i samples/jobs/data/experiment.csv $$j > out/jobs/$$n.result.json || exit 1; done
	@ls -l out/ out/jobs/

# The main job: `kiln serve` on 127.0.0.1:8080 (data in ./kiln-data), after a
# render, a download and a signed link made with curl (samples/serve_demo.sh).
serve: $(BIN)
	KILN=$(BIN) samples/serve_demo.sh

# Every test runs NPROC at a time: the unit binaries and the fuzz targets through
# mk/run_parallel.sh, the end-to-end tests in pytest-xdist workers. The e2e tests
# that start sandboxes share one worker (xdist group "sandbox", tests/e2e/conftest.py):
# each checks that no sandbox outlives it, which a sandbox of another test running
# beside it would break.
NPROC := $(shell nproc 2>/dev/null || echo 2)
E2E_WORKERS ?= $(NPROC)

unit-bins: $(UNIT_BINS)

unit: $(UNIT_BINS)
	@mk/run_parallel.sh $(NPROC) $(BUILD)/tests/logs $(foreach t,$(UNIT_BINS),$(notdir $(t))=$(t))

e2e: $(BIN) samples
	KILN_BIN=$(BIN) $(PYTHON) -m pytest -q -n $(E2E_WORKERS) --dist loadgroup tests/e2e

# Builds first, NPROC compilers at a time; then the tests. Each part is timed
# (mk/timed.sh) and the times printed at the end (tests/README.md).
CHECK_TIMES := $(BUILD)/check-times.log
TIMED := mk/timed.sh $(CHECK_TIMES)
check:
	@mk/timed.sh --start $(CHECK_TIMES)
	$(TIMED) build $(MAKE) -j$(NPROC) all unit-bins
	$(TIMED) banned tests/check_banned.sh
	$(TIMED) layers sh -c "tests/check_layers.sh --self-test && tests/check_layers.sh"
	$(TIMED) cycles tests/check_cycles.sh $(BUILD)
	$(TIMED) format-check $(MAKE) format-check
	$(TIMED) samples $(MAKE) samples
	$(TIMED) unit $(MAKE) unit
	$(TIMED) e2e $(MAKE) e2e
	$(TIMED) fuzz-build $(MAKE) -j$(NPROC) fuzz-targets
	$(TIMED) fuzz-check $(MAKE) fuzz-check
	$(TIMED) asan-build $(MAKE) asan-bins
	$(TIMED) asan-unit env $(SAN_ENV) $(ASAN_MAKE) unit
	$(TIMED) asan-e2e env $(SAN_ENV) $(ASAN_MAKE) e2e
	@echo "make check: every part passed; wall time by part:"
	@mk/timed.sh --report $(CHECK_TIMES)

# The C style is .clang-format's (clang-format 14, Debian 12's, in DEB_PKGS):
# `make format` rewrites every tracked .c and .h in place; `make format-check`
# changes nothing and fails listing the files that differ (tests/check_format.sh).
CLANG_FORMAT := clang-format
export CLANG_FORMAT
format:
	git ls-files -z '*.c' '*.h' | xargs -0 $(CLANG_FORMAT) --style=file -i

format-check:
	@tests/check_format.sh

# Sanitizer runtime settings for every instrumented run (tests/lsan.supp says why).
# intercept_tls_get_addr=0: clang 14's LeakSanitizer tracks the thread-local blocks
# of dlopen'ed libraries (kiln-writers.so) through __tls_get_addr, and with Debian
# 12's glibc it can record one from a pointer that starts no block; its exit-time
# scan then crashes ("Tracer caught signal 11"), as the heap's layout happens to
# fall (a .pptx whose output name is 32 bytes long, say; valgrind finds the same
# run clean). Not scanning those blocks can only report more leaks, never hide one.
SAN_ENV := ASAN_OPTIONS=fast_unwind_on_malloc=1:detect_leaks=1:intercept_tls_get_addr=0 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# The same tests with AddressSanitizer + UBSan, in a build tree of their own. The
# external readers (LibreOffice, ooxml-check, poppler, qpdf) do not run again there:
# a test stops at the first one (tests/e2e/conftest.py, external_reader).
ASAN_MAKE := $(MAKE) BUILD=build-asan BIN=build-asan/bin/kiln CC=clang \
	OPT="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	LDFLAGS="-fsanitize=address,undefined"
asan-bins:
	$(ASAN_MAKE) -j$(NPROC) all unit-bins

asan: asan-bins
	$(SAN_ENV) $(ASAN_MAKE) unit e2e

# Fuzzing (fuzz/README.md). The library is compiled once with the sanitizers
# and libFuzzer's coverage hooks into fuzz/build/obj/ and linked into each
# target. Each run (mk/fuzz_one.sh) first executes every kept input once: the
# minimized corpus fuzz/corpus/NAME, the crash regressions fuzz/regressions/NAME
# and the seeds (fuzz/seeds, samples/); those are only read. New inputs go to
# the first directory libFuzzer is given: a fresh temporary one for fuzz-check,
# fuzz/build/corpus/NAME (kept between runs, not committed) for fuzz.
FUZZ_CC      := clang
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -I. $(WARN) -O1 -g -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=all $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
FUZZ_OBJS    := $(LIB_SRCS:%.c=fuzz/build/obj/%.o)
FUZZ_TARGETS := $(patsubst fuzz/%.c,fuzz/build/%,$(wildcard fuzz/fuzz_*.c))
FUZZ_CORPUS      := fuzz/corpus
FUZZ_REGRESSIONS := fuzz/regressions
FUZZ_ARTIFACTS   := fuzz/build/
FUZZ_TIMEOUT     := 25
FUZZ_ARGS    := -max_len=65536 -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=2048 -detect_leaks=1 \
	-artifact_prefix=$(FUZZ_ARTIFACTS) -print_final_stats=1
export FUZZ_ARGS FUZZ_CORPUS FUZZ_REGRESSIONS

fuzz/build/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

fuzz/build/obj/common/templates.o: $(TEMPLATES)

# fuzz/selftest/fuzz_selftest fails on purpose, for tests/check_fuzz_check.sh
# (fuzz-check runs it); it is built with the others but never fuzzed.
FUZZ_SELFTEST_TARGET := fuzz/build/selftest/fuzz_selftest
$(sort $(FUZZ_TARGETS) $(FUZZ_SELFTEST_TARGET)): fuzz/build/%: fuzz/%.c fuzz/fuzz_common.h $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJS) $(LDLIBS)

-include $(FUZZ_OBJS:.o=.d)

fuzz-targets: $(FUZZ_TARGETS) $(FUZZ_SELFTEST_TARGET)

# Long runs: FUZZ_SECONDS per target (default 300), new inputs kept in
# fuzz/build/corpus/NAME. `make fuzz-corpus` then folds them into fuzz/corpus/.
fuzz: $(FUZZ_TARGETS)
	@for f in $(FUZZ_TARGETS); do n=$$(basename $$f); mkdir -p fuzz/build/corpus/$$n; \
		echo "== $$n ($${FUZZ_SECONDS:-300} s)"; \
		$(SAN_ENV) mk/fuzz_one.sh $$f $${FUZZ_SECONDS:-300} fuzz/build/corpus/$$n || exit 1; done

# fuzz/corpus/NAME made afresh with libFuzzer's -merge=1: the fewest, smallest
# inputs of fuzz/build/corpus/NAME and the old fuzz/corpus/NAME that reach what
# the seeds and regressions do not (mk/fuzz_corpus.sh).
fuzz-corpus: $(FUZZ_TARGETS)
	@for f in $(FUZZ_TARGETS); do $(SAN_ENV) mk/fuzz_corpus.sh $$f || exit 1; done

# For `make check`: every target NPROC at a time, each replaying its corpus,
# regressions and seeds, then fuzzing for the rest of FUZZ_SECONDS (default
# 15; 0: the replay alone). Any crash, leak, timeout or sanitizer report fails
# the make, naming the input; the logs stay in fuzz/build/logs/, a crashing
# input in fuzz/build/. Beside them, tests/check_fuzz_check.sh plants failing
# inputs for fuzz/selftest/fuzz_selftest and checks that this rule fails on
# each (FUZZ_SELFTEST=0 leaves it out: it runs this rule itself).
FUZZ_SELFTEST := 1
FUZZ_LOGS     := fuzz/build/logs
fuzz-check: $(FUZZ_TARGETS) $(if $(filter 1,$(FUZZ_SELFTEST)),$(FUZZ_SELFTEST_TARGET))
	@$(SAN_ENV) mk/run_parallel.sh $(NPROC) $(FUZZ_LOGS) \
		$(if $(filter 1,$(FUZZ_SELFTEST)),fuzz_selftest="MAKE='$(MAKE)' tests/check_fuzz_check.sh") \
		$(foreach f,$(FUZZ_TARGETS),$(notdir $(f))="mk/fuzz_one.sh $(f) $${FUZZ_SECONDS:-15}")
	@grep -H -E '^(Done|stat::number_of_executed_units)' $(foreach f,$(FUZZ_TARGETS),$(FUZZ_LOGS)/$(notdir $(f)).log)

# The npm packages the benchmark compares with, pinned in bench/package-lock.json.
bench/node_modules: bench/package.json
	npm ci --prefix bench --no-audit --no-fund
	@touch $@

# BENCH=xlsx|docx|pdf|pptx|run|serve|scale|session|mcp|batch runs one benchmark (bench/run.py); the default
# runs them all (run only as root; serve starts `kiln serve` and nginx under wrk).
bench: $(BIN) samples bench/node_modules
	KILN_BIN=$(BIN) KILN_LIB=$(BUILD)/libkiln.a $(PYTHON) bench/run.py $(BENCH)

clean:
	rm -rf $(BUILD) build-asan bin fuzz/build
