#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A signed apt archive of this project's Debian packages (make deb), for
# the tlbbalance role's deb mode from an archive (docs/ansible.md,
# "Installing from an apt archive"): apt-ftparchive (Debian's apt-utils)
# writes the indexes and the Release file, gpg signs it.
#
#   tools/deb/archive.sh OUTDIR SUITE KEY DEB...
#
# OUTDIR gets pool/main/ (the .debs), dists/SUITE/main/binary-{amd64,arm64}/
# Packages(.gz), dists/SUITE/Release, InRelease and Release.gpg, and
# archive-key.asc (KEY's public key, ASCII-armoured: what the nodes'
# signed-by names). KEY: a key id, fingerprint or user id of a secret key
# in gpg's keyring (GNUPGHOME). OUTDIR's earlier content goes; the .debs
# are copied, so OUTDIR may be served as it is (any HTTP server).
# A site with an archive of its own (reprepro, aptly) adds the .debs
# there instead.
set -eu
[ $# -ge 4 ] || {
	echo "usage: archive.sh OUTDIR SUITE KEY DEB..." >&2
	exit 2
}
out=$1 suite=$2 key=$3
shift 3
for tool in apt-ftparchive gpg dpkg-deb; do
	command -v "$tool" >/dev/null || {
		echo "archive: $tool is missing (tools/ci/install-system-deps.sh" \
			"installs the packages of tools/ci/system-packages.txt)" >&2
		exit 1
	}
done
case $suite in
*/* | '' | .*) echo "archive: bad suite name '$suite'" >&2; exit 2 ;;
esac
for deb; do
	dpkg-deb -f "$deb" Package >/dev/null 2>&1 ||
		{ echo "archive: $deb is not a Debian package" >&2; exit 1; }
done
gpg --batch --list-secret-keys "$key" >/dev/null 2>&1 ||
	{ echo "archive: no secret key '$key' in gpg's keyring" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/pool/main"
cp "$@" "$out/pool/main/"
cd "$out"
for arch in amd64 arm64; do
	dir=dists/$suite/main/binary-$arch
	mkdir -p "$dir"
	apt-ftparchive --arch "$arch" packages pool/main >"$dir/Packages"
	gzip -9n <"$dir/Packages" >"$dir/Packages.gz"
done
apt-ftparchive \
	-o APT::FTPArchive::Release::Origin=nova-tlbbalance \
	-o APT::FTPArchive::Release::Label=nova-tlbbalance \
	-o APT::FTPArchive::Release::Suite="$suite" \
	-o APT::FTPArchive::Release::Codename="$suite" \
	-o APT::FTPArchive::Release::Architectures="amd64 arm64" \
	-o APT::FTPArchive::Release::Components=main \
	release "dists/$suite" >Release.tmp
mv Release.tmp "dists/$suite/Release"
gpg --batch --yes -u "$key" --clearsign -o "dists/$suite/InRelease" \
	"dists/$suite/Release"
gpg --batch --yes -u "$key" -abs -o "dists/$suite/Release.gpg" \
	"dists/$suite/Release"
gpg --batch --armor --export "$key" >archive-key.asc
echo "archive: $out: $# package(s) in $suite, signed by $key"
