# SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
# Included by ../Makefile. `make bench`: instructions per decision under
# callgrind, 1000 VMs x 1000 ticks (BENCH_VMS, BENCH_TICKS to change).
BENCH_VMS ?= 1000
BENCH_TICKS ?= 1000

.PHONY: bench
$(O)/bench_ctrl: bench/bench_ctrl.c $(O)/libtlbbctrl.a
	$(CC) $(ALL_CFLAGS) -o $@ $< $(O)/libtlbbctrl.a

bench: $(O)/bench_ctrl
	bench/run.sh $(O)/bench_ctrl $(BENCH_VMS) $(BENCH_TICKS)
