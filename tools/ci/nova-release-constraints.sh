#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# nova-release-constraints.sh RELEASE: write constraints/nova-RELEASE.txt,
# the pins of the functional suite against an older nova release: that
# release's newest nova and placement, and every other library at the
# newest version PyPI had shortly after the release came out (uv's
# --exclude-newer), a stand-in for the release's own upper-constraints
# (releases.openstack.org is not reachable from CI's machines). Needs
# network access to PyPI; the result is committed and reviewed like
# constraints.txt. docs/nova-releases.md says why and what runs.
set -euo pipefail
cd "$(dirname "$0")/../.."

# release: nova, placement, the date libraries are taken at
declare -A nova=([2025.1]=31.3.1 [2025.2]=32.2.1 [2026.1]=33.0.2)
declare -A placement=([2025.1]='>=13.0.0,<14' [2025.2]='>=14.0.0,<15'
		      [2026.1]='>=15.0.0,<16')
declare -A libs_at=([2025.1]=2025-04-15 [2025.2]=2025-10-15
		    [2026.1]=2026-04-15)

rel=${1:-}
if [ -z "$rel" ] || [ -z "${nova[$rel]:-}" ]; then
	echo "usage: $0 <${!nova[*]}> (the newest, 2026.2, is constraints.txt)" >&2
	exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q 'uv==0.13.9'
{
	echo "nova==${nova[$rel]}"
	echo "openstack-placement${placement[$rel]}"
	# the functional suite's other needs (test-requirements.txt, minus
	# nova's pin) and the package's own (requirements.txt)
	grep -v '^nova\b' test-requirements.txt | sed 's/#.*//' | grep .
	sed 's/#.*//' requirements.txt | grep .
} >"$work/req.in"
"$work/venv/bin/uv" pip compile -q --python-version 3.11 \
	--exclude-newer "${libs_at[$rel]}" \
	--exclude-newer-package "nova=2100-01-01" \
	--exclude-newer-package "openstack-placement=2100-01-01" \
	"$work/req.in" -o "$work/out.txt"
out=constraints/nova-$rel.txt
{
	echo "# nova ${nova[$rel]} (OpenStack $rel) and the library versions PyPI had on"
	echo "# ${libs_at[$rel]}: written by tools/ci/nova-release-constraints.sh $rel"
	echo "# (docs/nova-releases.md). Do not edit by hand."
	grep -v '^ *#' "$work/out.txt" | grep .
} >"$out"
echo "$out: $(grep -c '==' "$out") pins"
