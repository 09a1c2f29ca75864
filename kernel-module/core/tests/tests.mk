# SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
# Included by ../Makefile. `make test`:
#   1. the unit tests linked against libtlbbctrl.a as shipped (-O2);
#   2. the same tests with UBSan and ASan (any report aborts the run);
#   3. the same tests against an -O0 --coverage build of tlbb_ctrl.c, then
#      gcov's line and branch coverage of tlbb_ctrl.c, and any branch never
#      taken.
# The first run prints the "N passed, N failed" line CI adds up.

TEST_SRCS := tests/test_main.c tests/vm_helper.c tests/test_params.c \
	tests/test_arith.c tests/test_method.c tests/test_invariants.c \
	tests/test_hill.c tests/test_safe.c tests/test_heat.c \
	tests/test_pmu_table.c
TEST_HDRS := tests/test_harness.h tests/vm_helper.h $(PMU_HDRS)
COV_DIR := $(O)/cov
SAN := -fsanitize=undefined,address -fno-sanitize-recover=all
GCOV ?= gcov

.PHONY: test test-unit test-sanitizers test-coverage mutants
test: test-unit test-sanitizers test-coverage

$(O)/tlbb_tests: $(TEST_SRCS) $(TEST_HDRS) $(O)/libtlbbctrl.a
	$(CC) $(ALL_CFLAGS) -o $@ $(TEST_SRCS) $(O)/libtlbbctrl.a

test-unit: $(O)/tlbb_tests
	$(O)/tlbb_tests

# The object name decides the .gcda name: keep it tlbb_ctrl.o in COV_DIR.
# No sanitizer here: its checks would add branches of their own.
$(COV_DIR)/tlbb_tests: $(TEST_SRCS) $(TEST_HDRS) tlbb_ctrl.c $(HDRS) \
		tlbb_pmu_table.c
	mkdir -p $(COV_DIR)
	$(CC) -std=gnu11 -O0 -g --coverage $(CFLAGS_COMMON) \
		-c -o $(COV_DIR)/tlbb_ctrl.o $(CURDIR)/tlbb_ctrl.c
	$(CC) -std=gnu11 -O0 -g -Wall -Wextra -Werror -o $@ \
		$(TEST_SRCS) $(COV_DIR)/tlbb_ctrl.o tlbb_pmu_table.c -lgcov

$(O)/san/tlbb_tests: $(TEST_SRCS) $(TEST_HDRS) tlbb_ctrl.c $(HDRS) \
		tlbb_pmu_table.c
	mkdir -p $(O)/san
	$(CC) -std=gnu11 -O1 -g $(SAN) $(CFLAGS_COMMON) -Wno-missing-prototypes \
		-o $@ $(TEST_SRCS) tlbb_ctrl.c tlbb_pmu_table.c

# Runs other than the first report "N ok, N not ok" so CI counts tests once.
RELABEL = sed -E 's/^([0-9]+) passed, ([0-9]+) failed/$(1): \1 ok, \2 not ok/'

test-sanitizers: $(O)/san/tlbb_tests
	set -o pipefail; $(O)/san/tlbb_tests -q | \
		$(call RELABEL,UBSan+ASan build)

test-coverage: $(COV_DIR)/tlbb_tests
	rm -f $(COV_DIR)/*.gcda
	set -o pipefail; $(COV_DIR)/tlbb_tests -q | \
		$(call RELABEL,coverage build)
	cd $(COV_DIR) && $(GCOV) -b -c -o . tlbb_ctrl.o > gcov.txt
	@# Branches of the X-macros expanded in tlbb_ctrl.c are filed under
	@# tlbb_params.def: print both.
	@awk '/^File/ { f = $$2; gsub(/.*\/|\047/, "", f) } /^$$/ { f = "total" } \
		/executed|Taken/ && f { print "gcov tlbb_ctrl.c (" f "): " $$0 }' \
		$(COV_DIR)/gcov.txt
	@# Every branch of the method has a test: anything less fails, and
	@# the untaken lines are listed.
	@if grep -q '^Taken at least once:' $(COV_DIR)/gcov.txt && \
	    ! grep '^Taken at least once:' $(COV_DIR)/gcov.txt | \
		grep -vq ':100.00% of'; then \
		echo "branch coverage of tlbb_ctrl.c: 100 %"; \
	else \
		grep -n -B2 '#####\|taken 0%\|taken 0 \|never executed' \
			$(COV_DIR)/*.gcov | grep -v ' call ' | head -40; \
		echo "branch coverage of tlbb_ctrl.c below 100 %: add tests"; \
		exit 1; \
	fi

# Not part of `make test` (about a minute): break tlbb_ctrl.c in a copy,
# one decision at a time, and check that the unit tests notice every time.
mutants:
	python3 tests/mutants.py
