#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
# Record a program's data-address trace with valgrind's lackey tool and
# convert it to tlbsim's compact trace format (gzip-compressed).
#
#   traces/record.sh [-s SKIP] [-n MAX_ACCESSES] [-i] OUT.trc.gz -- PROGRAM [ARGS...]
#
# -s  drop the first SKIP accesses (a program's start-up; default 0): the
#     trace holds accesses SKIP+1 to SKIP+MAX
# -n  stop after this many accesses (default 50000000); valgrind is then
#     stopped (lackey slows a program ~100x, so this bounds the time)
# -i  include instruction fetches (default: data loads/stores only)
#
# lackey prints one line per access ("I  addr,size", " L addr,size",
# " S ...", " M ..."); `tlbsim lackey2trace` keeps page numbers, collapses
# runs on one page into repeat counts and writes varint deltas. The program
# runs with its stdout/stderr discarded.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
max=50000000
skip=0
instr=
while getopts "s:n:i" opt; do
	case $opt in
	s) skip=$OPTARG ;;
	n) max=$OPTARG ;;
	i) instr=--instr ;;
	*) echo "usage: $0 [-s SKIP] [-n MAX] [-i] OUT.trc.gz -- PROGRAM [ARGS...]" >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -lt 3 ] || [ "$2" != "--" ]; then
	echo "usage: $0 [-s SKIP] [-n MAX] [-i] OUT.trc.gz -- PROGRAM [ARGS...]" >&2
	exit 2
fi
out=$1
shift 2
command -v valgrind >/dev/null || { echo "$0: valgrind not installed" >&2; exit 1; }
make -s -C "$here" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkfifo "$tmp/lackey"
valgrind --tool=lackey --trace-mem=yes --log-file="$tmp/lackey" \
	"$@" >/dev/null 2>&1 </dev/null &
vg=$!
# gzip -9 -n: the smallest file, and no name or time in its header, so
# two recordings of the same accesses are the same file
"$here/build/tlbsim" lackey2trace --skip "$skip" --max "$max" $instr <"$tmp/lackey" |
	gzip -9 -n >"$tmp/out.trc.gz"
# enough recorded (or the program ended): stop valgrind, ours only
kill -KILL "$vg" 2>/dev/null || true
wait "$vg" 2>/dev/null || true
mv "$tmp/out.trc.gz" "$out"
"$here/build/tlbsim" trace-info "$out"
