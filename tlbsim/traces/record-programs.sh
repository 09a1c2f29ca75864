#!/bin/bash
# Record the three real-program traces the docs use (docs/simulator.md),
# into ~/.cache/nova-tlbbalance/traces/ (skipped when already there).
#
#   traces/record-programs.sh [-n MAX_ACCESSES] [NAME...]
#
# valgrind does not follow exec: name the real binaries (no wrappers such as
# env or a pyenv shim), or only the wrapper is traced.
#
# Names: xz (xz -9 compressing 64 MiB of this machine's binaries), python
# (a 3 M-entry dict built, then probed at random), sort (GNU sort of 2 M
# shuffled lines with a 256 MiB buffer). Inputs are generated
# deterministically into the same cache.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/nova-tlbbalance/traces
max=60000000
if [ "${1:-}" = "-n" ]; then max=$2; shift 2; fi
names=${*:-"xz python sort"}
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
	*)
		echo "$0: unknown trace '$name' (xz, python, sort)" >&2
		exit 2 ;;
	esac
done
