# Kiln - see README.md. `make` builds bin/kiln; `make check` runs every test.
CC        ?= cc
PKGS      := jansson xlsxwriter md4c
BUILD     ?= build
BIN       := bin/kiln
PYTHON    := /usr/bin/python3

WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2
CFLAGS    ?= -O2 -g
CFLAGS    += -std=c11 -D_GNU_SOURCE $(WARN) -I. $(shell pkg-config --cflags $(PKGS))
LDLIBS    += $(shell pkg-config --libs $(PKGS)) -lm

LIB_SRCS  := $(sort $(wildcard common/*.c artifacts/*.c artifacts/xlsx/*.c exec/*.c))
CLI_SRCS  := $(sort $(wildcard cli/*.c))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o)
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TEMPLATES := $(shell find templates -type f)

.PHONY: all deps check unit e2e asan fuzz fuzz-check bench samples demo clean
all: $(BIN)

$(BUILD)/libkiln.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN): $(CLI_OBJS) $(BUILD)/libkiln.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# The templates are pulled in by .incbin, which -MMD cannot see.
$(BUILD)/common/templates.o: $(TEMPLATES)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libkiln.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libkiln.a $(LDLIBS) $(shell pkg-config --libs cmocka)

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d)

# Debian packages for the build, the tests, the demo and the benchmark.
DEB_PKGS := build-essential pkg-config libjansson-dev libxlsxwriter-dev libmd4c-dev \
	libcmocka-dev clang libclang-rt-14-dev python3 python3-openpyxl python3-xlsxwriter \
	python3-jsonschema python3-lxml python3-pytest libxml2-utils libreoffice-calc-nogui \
	time unzip
deps:
	@missing=$$(for p in $(DEB_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
		| grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		echo "installing:$$missing"; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	else echo "make deps: all packages present"; fi

samples: $(BIN)
	$(PYTHON) samples/make_data.py

# The main job for now: render every sample into out/ and list what it made.
demo: $(BIN) samples
	@mkdir -p out
	@for s in samples/*.json; do n=$$(basename $$s .json); \
		$(BIN) render $$s -o out/$$n.xlsx || exit 1; done
	@ls -l out/

unit: $(UNIT_BINS)
	@for t in $(UNIT_BINS); do echo "== $$t"; $$t || exit 1; done

e2e: $(BIN) samples
	$(PYTHON) -m pytest -q tests/e2e

check: all unit e2e fuzz-check

# The same tests with AddressSanitizer + UBSan, in a build tree of their own.
asan:
	$(MAKE) BUILD=build-asan BIN=build-asan/bin/kiln CC=clang \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
		LDFLAGS="-fsanitize=address,undefined" KILN_BIN=build-asan/bin/kiln unit e2e

FUZZ_FLAGS := -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
fuzz/build/%: fuzz/%.c $(LIB_SRCS) $(TEMPLATES)
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE -I. $(FUZZ_FLAGS) $(shell pkg-config --cflags $(PKGS)) \
		-o $@ $< $(LIB_SRCS) $(LDLIBS)

FUZZ_TARGETS := $(patsubst fuzz/%.c,fuzz/build/%,$(wildcard fuzz/fuzz_*.c))
fuzz: $(FUZZ_TARGETS)
	@for f in $(FUZZ_TARGETS); do mkdir -p fuzz/corpus/$$(basename $$f); \
		$$f -max_total_time=$${FUZZ_SECONDS:-300} fuzz/corpus/$$(basename $$f) samples || exit 1; done

fuzz-check: $(FUZZ_TARGETS)
	@for f in $(FUZZ_TARGETS); do $$f -max_total_time=$${FUZZ_SECONDS:-20} -max_len=65536 samples || exit 1; done

bench: $(BIN)
	$(PYTHON) bench/run.py

clean:
	rm -rf $(BUILD) build-asan bin fuzz/build
