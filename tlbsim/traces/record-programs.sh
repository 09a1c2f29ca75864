#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
# Record the real-program traces the docs use (docs/simulator.md),
# into ~/.cache/nova-tlbbalance/traces/ (skipped when already there).
#
#   traces/record-programs.sh [-n MAX_ACCESSES] [NAME...]
#
# valgrind does not follow exec: name the real binaries (no wrappers such as
# env or a pyenv shim), or only the wrapper is traced.
#
# Names: xz (xz -9 compressing 64 MiB of this machine's binaries), python
# (a 3 M-entry dict built, then probed at random), sort (GNU sort of 2 M
# shuffled lines with a 256 MiB buffer), sqlite (the sqlite3 shell doing
# 25 000 random point lookups by primary key in a 1.6 GB database read
# through mmap: interior B-tree pages hot, leaves cold, over the whole file).
# Inputs are generated deterministically into the same cache; the sqlite
# database (7.5 M rows of 200 zero bytes, 1.62 GB) is built natively, not
# under valgrind.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/nova-tlbbalance/traces
max=60000000
if [ "${1:-}" = "-n" ]; then max=$2; shift 2; fi
names=${*:-"xz python sort sqlite"}
mkdir -p "$cache"

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

for name in $names; do
	out=$cache/$name.trc.gz
	if [ -s "$out" ]; then
		echo "$name: $out (cached)"
		continue
	fi
	case $name in
	xz)
		input_xz
		"$here/record.sh" -n "$max" "$out" -- \
			/usr/bin/xz -9 -T1 -c "$cache/xz-input.bin" ;;
	python)
		"$here/record.sh" -n "$max" "$out" -- /usr/bin/python3 -c '
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
		LC_ALL=C "$here/record.sh" -n "$max" "$out" -- \
			/usr/bin/sort -S 256M "$cache/sort-input.txt" ;;
	sqlite)
		need_sqlite3
		input_sqlite
		"$here/record.sh" -n "$max" "$out" -- \
			/usr/bin/sqlite3 -init /dev/null -batch -readonly \
			"$cache/sqlite-input.db" \
			'PRAGMA mmap_size = 2147418112;' \
			"WITH RECURSIVE k(n, x) AS (SELECT 0, 1 UNION ALL
			 SELECT n + 1, x * 48271 % 2147483647 FROM k
			 WHERE n < $sqlite_lookups)
			 SELECT count(*), sum(length(v))
			 FROM k CROSS JOIN t ON t.id = 1 + k.x % $sqlite_rows;" ;;
	*)
		echo "$0: unknown trace '$name' (xz, python, sort, sqlite)" >&2
		exit 2 ;;
	esac
done
