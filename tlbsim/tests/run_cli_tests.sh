#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
# The tlbsim command line: bad input exits 2 with a message naming the
# culprit; the embedded controller hash is that of the file the Makefile
# compiled; small runs print the JSON fields the Python front end reads.
set -u
cd "$(dirname "$0")/.." || exit 2
B=${O:-build}/tlbsim
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# expect_error "needle" args...: exit status 2, stderr contains needle
expect_error() {
	local needle=$1 err rc
	shift
	err=$("$B" "$@" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq 2 ] && [[ $err == *"$needle"* ]]; then ok; else
		bad "tlbsim $* -> rc $rc, '$err' (wanted '$needle')"; fi
}

expect_error "no such preset" run --machine z80
expect_error "unknown kind 'zipf'" run --workload zipf:size=1G
expect_error "--model 'arm'" run --model arm
expect_error "--controller 'maybe'" run --controller maybe
expect_error "--controller needs a VM model" run --model native \
	--controller balance
expect_error "--thp-host 'perhaps'" run --thp-host perhaps
expect_error "--accesses 'many'" run --accesses many
expect_error "param imbalance_threshold=0" run --param imbalance_threshold=0
expect_error "param bogus: unknown" run --param bogus=1
expect_error "param method=fast: need a decimal integer in 0..2 (method) or its name" \
	run --param method=fast
expect_error "param samples=hill: need a decimal integer in 1..64 (samples)" \
	run --param samples=hill
# the enumerated tunables by name (kernel-module/core/tlbb_choices.def):
# the same run as by number, but for the wall-clock fields
named() {
	"$B" run --workload mcf --accesses 2000000 --controller balance "$@" |
		sed 's/"wall_s": [^,]*, //; s/"accesses_per_cpu_s": [^,}]*//; s/"cpu_s": [^,]*, //'
}
a=$(named --param method=1 --param split_order=2)
b=$(named --param method=hill --param split_order=heat)
if [ "$a" = "$b" ] && [[ $b == *'"split_order": "heat",'* ]]; then ok; else
	bad "--param by name: $b vs $a"; fi
expect_error "--split-order 'middle'" run --split-order middle
expect_error "unexpected argument 'extra'" run extra
expect_error "--access-ns '0'" run --access-ns 0
expect_error "--refill-ns 'x'" run --refill-ns x
expect_error "--huge-limit 'x'" run --huge-limit x
expect_error "--huge-limit '-1'" run --huge-limit -1
expect_error "with --controller off" run --huge-limit 3 --controller balance
expect_error "with --controller off" run --huge-limit 3 --model native
# a held limit: that many host huge pages, no more, all run long
tmp=$(mktemp)
out=$("$B" run --workload mcf --accesses 2000000 --huge-limit 7 --series "$tmp")
case $out in
*'"huge_pages": 7, "huge_limit": 7,'*) ok ;;
*) bad "--huge-limit 7: $out" ;;
esac
# ... and the per-tick series says so too (huge_pages,huge_limit = 7,7)
last=$(tail -n 1 "$tmp")
rm -f "$tmp"
case $last in
*,7,7,off,*) ok ;;
*) bad "--huge-limit 7 series: $last" ;;
esac
# the cost model: 1000 accesses of 64 B cover 4 base pages (1 MiB is less
# than a huge page): 1000 x 2 ns + 4 refills x 1000 ns = 6 us
out=$("$B" run --workload seq:size=1M --accesses 1000 --model native \
	--access-ns 2 --refill-ns 1000)
if [[ $out == *'"est_time_s": 0.000006,'* ]]; then ok; else
	bad "cost model override: $out"; fi

geo=$(mktemp)
printf 'name broken\nbase_page 16K\nhuge_page 32M\ngroup V entries=64 ways=3 sizes=huge\n' > "$geo"
expect_error "$geo:4: group V" run --machine "$geo"
"$B" preset gs464v | sed 's/entries=64 ways=64/entries=32 ways=32/' > "$geo"
if "$B" run --machine "$geo" --accesses 1M | grep -q '"entries": 32,'; then ok; else
	bad "a geometry file loaded from a path"; fi
rm -f "$geo"

# the controller source: the file compiled is the file in the tree
want=$(sha256sum ../kernel-module/core/tlbb_ctrl.c | cut -d' ' -f1)
got=$("$B" version | sed 's/.*"ctrl_sha256": "\([0-9a-f]*\)".*/\1/')
if [ "$want" = "$got" ]; then ok; else
	bad "controller hash $got != $want (rebuild?)"; fi

out=$("$B" run --workload seq:size=64M --accesses 1M --model native)
for f in '"refills_huge": 2,' '"refills_small": 0,' '"accesses": 1000000,'; do
	if [[ $out == *"$f"* ]]; then ok; else bad "seq run lacks $f: $out"; fi
done

for p in $("$B" presets); do
	if "$B" run --machine "$p" --accesses 200K --controller balance \
		>/dev/null; then ok; else bad "preset $p run"; fi
done

echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
