#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make deb: the Debian packages built from this tree (debian/) by
# dpkg-buildpackage on a copy of the tree's files (`git ls-files`: the tree
# itself is left as it was), then lintian over the result.
#
#   tools/deb/build.sh [OUTDIR] [+SUFFIX | VERSION]   default OUTDIR: out/deb
#
# +SUFFIX: the same tree as version X.Y.Z+SUFFIX (a changelog entry added
# on the copy; the module's version follows it): a newer package, for
# upgrade tests (tox -e deb, tests/ansible/test_rollout_deb.py). VERSION
# (newer than the changelog's): the same tree as that version, for a
# test that needs a package newer than some other install.
#
# OUTDIR gets tlbbalance-dkms_*.deb, python3-nova-tlbbalance_*.deb, the
# source package (.dsc, .tar.xz), .changes, .buildinfo, the build log and
# lintian.txt. Exit status: non-zero when the build fails or lintian
# reports an error (E:); its warnings are printed and documented in
# docs/releasing.md#debian-packages.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/out/deb}
suffix=${2:-}
case $suffix in
'' | +[0-9A-Za-z.~]* | [0-9]*) ;;
*) echo "deb: give +SUFFIX (+[0-9A-Za-z.~]...) or a VERSION, not" \
	"'$suffix'" >&2; exit 2 ;;
esac
case $out in /*) ;; *) out=$PWD/$out ;; esac
for tool in dpkg-buildpackage dh dh_dkms dh_python3 lintian; do
	command -v "$tool" >/dev/null || {
		echo "deb: $tool is missing (tools/ci/install-system-deps.sh" \
			"installs the packages of tools/ci/system-packages.txt)" >&2
		exit 1
	}
done
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -SVersion)
# the version to build, refused before any work when it is not newer
case $suffix in
'') new=$version ;;
+*) new=$version$suffix ;;
*)
	dpkg --compare-versions "$suffix" gt "$version" || {
		echo "deb: VERSION $suffix is not newer than the changelog's" \
			"$version" >&2
		exit 2
	}
	new=$suffix
	;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$work/nova-tlbbalance-$version
mkdir -p "$src" "$out"
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	tar --null -T - --ignore-failed-read -cf -) | tar -C "$src" -xf -
rm -rf "$src/.ci"
if [ -n "$suffix" ]; then
	version=$new
	mv "$src" "$work/nova-tlbbalance-$version"
	src=$work/nova-tlbbalance-$version
	{
		printf 'nova-tlbbalance (%s) unstable; urgency=medium\n\n' \
			"$version"
		printf '  * Test build of the tree as %s (tools/deb/build.sh).\n\n' \
			"$version"
		# a minute after the entry it follows (lintian: a newer entry
		# needs a later date)
		printf ' -- %s  %s\n\n' "$(dpkg-parsechangelog \
			-l "$top/debian/changelog" -SMaintainer)" \
			"$(date -u -R -d "@$(($(dpkg-parsechangelog \
				-l "$top/debian/changelog" -STimestamp) + 60))")"
		cat "$top/debian/changelog"
	} >"$src/debian/changelog"
fi
echo "deb: dpkg-buildpackage in $src (log: $out/build.log)"
# Debian's own python3 (not a pyenv or virtualenv python first in PATH):
# the packages are for it, and pybuild needs its python3-build
if ! (cd "$src" && PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	dpkg-buildpackage -us -uc) >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed (whole log: $out/build.log)" >&2
	exit 1
fi
rm -f "$out"/*.deb "$out"/*.dsc "$out"/*.tar.xz "$out"/*.changes \
	"$out"/*.buildinfo
for f in "$work"/*.deb "$work"/*.dsc "$work"/*.tar.xz "$work"/*.changes \
	"$work"/*.buildinfo; do
	mv "$f" "$out/"
done
changes=$(ls "$out"/*.changes)
echo "deb: lintian $changes"
lintian --info --display-info "$changes" >"$out/lintian.txt" 2>&1 || true
cat "$out/lintian.txt"
ls -l "$out"/*.deb
if grep -q '^E: ' "$out/lintian.txt"; then
	echo "deb: lintian reports errors" >&2
	exit 1
fi
