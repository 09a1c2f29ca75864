#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# want-kmod-debug.sh: should this CI run include tox -e kmod-debug (the
# in-kernel suite under the debug kernel, docs/kernel-tests.md)?  It is too
# slow for every run from an empty cache (the kernel build alone takes tens
# of minutes on 2 cores), so it runs for every change that touches the
# module or the debug kernel: a file changed between the merge base with
# $TLBB_CI_BASE (default: main, else origin/main) and the working tree under kernel-module/,
# tools/kernels/build-debug.sh or tools/kernels/debug/.
# TLBB_KMOD_DEBUG=1 forces it, =0 leaves it out.
#
# Prints one line saying why, exits 0 (run it) or 1 (leave it out).
set -u
cd "$(dirname "$0")/../.." || exit 2
case "${TLBB_KMOD_DEBUG:-}" in
1) echo "kmod-debug: TLBB_KMOD_DEBUG=1"; exit 0 ;;
0) echo "kmod-debug: left out (TLBB_KMOD_DEBUG=0)"; exit 1 ;;
'') ;;
*) echo "kmod-debug: TLBB_KMOD_DEBUG must be 0 or 1, not" \
	"'$TLBB_KMOD_DEBUG'" >&2; exit 2 ;;
esac
paths=(kernel-module tools/kernels/build-debug.sh tools/kernels/debug)
base=
for base_ref in ${TLBB_CI_BASE:-main origin/main}; do
	base=$(git merge-base HEAD "$base_ref" 2>/dev/null) && break
done
if [ -z "$base" ]; then
	# No base to compare with (a clone without it): leave it out. Its
	# kernel build from an empty cache alone could take CI past its
	# 90-minute limit; TLBB_KMOD_DEBUG=1 runs it anyway.
	echo "kmod-debug: no merge base with '$base_ref': left out" \
		"(TLBB_KMOD_DEBUG=1 runs it)"
	exit 1
fi
# Committed changes since the base, and uncommitted ones.
changed=$( { git diff --name-only "$base" -- "${paths[@]}"
	     git ls-files --others --exclude-standard -- "${paths[@]}"; } |
	   sort -u)
if [ -n "$changed" ]; then
	echo "kmod-debug: $(echo "$changed" | wc -l) file(s) changed since" \
		"$base_ref under ${paths[*]}, e.g. $(echo "$changed" | head -n 1)"
	exit 0
fi
echo "kmod-debug: left out (nothing changed since $base_ref under ${paths[*]})"
exit 1
