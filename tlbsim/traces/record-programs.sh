#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
# Record the real-program traces the docs use (docs/simulator.md),
# into ~/.cache/nova-tlbbalance/traces/ (skipped when already there).
#
#   traces/record-programs.sh [-n MAX_ACCESSES] [-s SKIP] [NAME...]
#   traces/record-programs.sh -c [NAME...]
#
# -c  the committed cuts: into tlbsim/traces/recorded/NAME.trc.gz (replaced
#     when there), each with its own SKIP and MAX (below; -n/-s override
#     them), names sqlite, cc1 and sysbench-memory by default; the family
#     test replays them (tlbsim/traces/recorded/README.md)
#
# valgrind does not follow exec: name the real binaries (no wrappers such as
# env or a pyenv shim), or only the wrapper is traced.
#
# Names: xz (xz -9 compressing 64 MiB of this machine's binaries), python
# (a 3 M-entry dict built, then probed at random), sort (GNU sort of 2 M
# shuffled lines with a 256 MiB buffer), sqlite (the sqlite3 shell doing
# 25 000 random point lookups by primary key in a 1.6 GB database read
# through mmap: interior B-tree pages hot, leaves cold, over the whole file),
# cc1 (gcc 12's cc1 compiling kernel-module/core/tlbb_ctrl.c at -O2, the
# real compiler process, not the gcc driver), sysbench-memory (sysbench
# 1.0's memory test, random 8-byte reads over a 2 GiB block, one thread).
# Inputs are generated deterministically into the same cache; the sqlite
# database (7.5 M rows of 200 zero bytes, 1.62 GB) is built natively, not
# under valgrind.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/nova-tlbbalance/traces
max=
skip=
committed=
while getopts "n:s:c" opt; do
	case $opt in
	n) max=$OPTARG ;;
	s) skip=$OPTARG ;;
	c) committed=1 ;;
	*) echo "usage: $0 [-c] [-n MAX] [-s SKIP] [NAME...]" >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ -n "$committed" ]; then
	names=${*:-"sqlite cc1 sysbench-memory"}
	dest=$here/recorded
else
	names=${*:-"xz python sort sqlite"}
	dest=$cache
fi
mkdir -p "$cache" "$dest"

# The committed cuts (-c): accesses dropped first (start-up; for sysbench
# also the memset of its block), then accesses kept, each sized to keep its
# file near 1.2 MB (tlbsim/traces/recorded/README.md has why).
cut_skip() {
	case $1 in
	sqlite) echo 900000 ;;
	cc1) echo 20000000 ;;
	sysbench-memory) echo 72000000 ;;
	*) echo 0 ;;
	esac
}
cut_max() {
	case $1 in
	sqlite) echo 11000000 ;;
	cc1) echo 6000000 ;;
	sysbench-memory) echo 1200000 ;;
	*) echo 60000000 ;;
	esac
}

input_xz() {
	[ -s "$cache/xz-input.bin" ] && return
	find /usr/bin -maxdepth 1 -type f -size +100k | LC_ALL=C sort |
		xargs cat 2>/dev/null | head -c 67108864 >"$cache/xz-input.bin.tmp"
	mv "$cache/xz-input.bin.tmp" "$cache/xz-input.bin"
}

input_sort() {
	[ -s "$cache/sort-input.txt" ] && return
	seq 1 2000000 | awk '{ srand($1); printf "%08x%s\n", rand() * 4294967295, $1 }' \
		>"$cache/sort-input.txt.tmp"
	mv "$cache/sort-input.txt.tmp" "$cache/sort-input.txt"
}

# sqlite: the table and the lookups. Keys come from a Park-Miller LCG in SQL
# integer arithmetic (x * 48271 mod 2^31-1, no overflow), not random(), so
# the lookups are the same every time; CROSS JOIN keeps the key generator
# the outer loop, a co-routine: one key, one lookup, no key table built
# first.
sqlite_rows=7500000
sqlite_lookups=25000

need_sqlite3() {
	[ -x /usr/bin/sqlite3 ] && return
	echo "$0: /usr/bin/sqlite3 not found (Debian package sqlite3)" >&2
	exit 1
}

input_sqlite() {
	[ -s "$cache/sqlite-input.db" ] && return
	rm -f "$cache/sqlite-input.db.tmp"
	/usr/bin/sqlite3 -init /dev/null -batch "$cache/sqlite-input.db.tmp" \
		'PRAGMA journal_mode = OFF;' 'PRAGMA synchronous = OFF;' \
		'PRAGMA page_size = 4096;' \
		'CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);' \
		"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL
		 SELECT i + 1 FROM c WHERE i < $sqlite_rows)
		 INSERT INTO t SELECT i, zeroblob(200) FROM c;" >/dev/null
	mv "$cache/sqlite-input.db.tmp" "$cache/sqlite-input.db"
}

# cc1's input: the module's controller core, compiled as tlbsim's Makefile
# does (-O2 -std=gnu11); the command is what `gcc -### -O2 -std=gnu11 -c`
# runs, its output to a scratch file
cc1_src=$(cd "$here/../../kernel-module/core" && pwd)/tlbb_ctrl.c
cc1=/usr/lib/gcc/x86_64-linux-gnu/12/cc1

for name in $names; do
	out=$dest/$name.trc.gz
	if [ -z "$committed" ] && [ -s "$out" ]; then
		echo "$name: $out (cached)"
		continue
	fi
	if [ -n "$committed" ]; then
		n=${max:-$(cut_max "$name")}
		s=${skip:-$(cut_skip "$name")}
	else
		n=${max:-60000000}
		s=${skip:-0}
	fi
	set -- -s "$s" -n "$n" "$out"
	case $name in
	xz)
		input_xz
		"$here/record.sh" "$@" -- \
			/usr/bin/xz -9 -T1 -c "$cache/xz-input.bin" ;;
	python)
		"$here/record.sh" "$@" -- /usr/bin/python3 -c '
import random
random.seed(1)
d = {i * 7919: str(i) for i in range(3000000)}
keys = list(d)
s = 0
for _ in range(2000000):
    s += len(d[keys[random.randrange(len(keys))]])
print(s)' ;;
	sort)
		input_sort
		LC_ALL=C "$here/record.sh" "$@" -- \
			/usr/bin/sort -S 256M "$cache/sort-input.txt" ;;
	sqlite)
		need_sqlite3
		input_sqlite
		"$here/record.sh" "$@" -- \
			/usr/bin/sqlite3 -init /dev/null -batch -readonly \
			"$cache/sqlite-input.db" \
			'PRAGMA mmap_size = 2147418112;' \
			"WITH RECURSIVE k(n, x) AS (SELECT 0, 1 UNION ALL
			 SELECT n + 1, x * 48271 % 2147483647 FROM k
			 WHERE n < $sqlite_lookups)
			 SELECT count(*), sum(length(v))
			 FROM k CROSS JOIN t ON t.id = 1 + k.x % $sqlite_rows;" ;;
	cc1)
		[ -x "$cc1" ] || { echo "$0: $cc1 not found (gcc-12)" >&2; exit 1; }
		"$here/record.sh" "$@" -- "$cc1" -quiet \
			-imultiarch x86_64-linux-gnu "$cc1_src" -quiet \
			-dumpbase tlbb_ctrl.c -dumpbase-ext .c -mtune=generic \
			-march=x86-64 -O2 -std=gnu11 \
			-fasynchronous-unwind-tables -o /dev/null ;;
	sysbench-memory)
		# glibc's memset of the block uses `rep stosb` above 2 KiB,
		# which lackey sees as one store per byte (2 G accesses for
		# the 2 GiB block); the tunable keeps it to 32-byte vector
		# stores (64 M accesses), which the cut skips
		[ -x /usr/bin/sysbench ] || {
			echo "$0: /usr/bin/sysbench not found (Debian package sysbench)" >&2
			exit 1; }
		GLIBC_TUNABLES=glibc.cpu.x86_rep_stosb_threshold=0x7fffffffffffffff \
			"$here/record.sh" "$@" -- /usr/bin/sysbench memory \
			--threads=1 --rand-seed=1 --memory-block-size=2G \
			--memory-total-size=2G --memory-access-mode=rnd \
			--memory-oper=read run ;;
	*)
		echo "$0: unknown trace '$name' (xz, python, sort, sqlite, cc1, sysbench-memory)" >&2
		exit 2 ;;
	esac
done
