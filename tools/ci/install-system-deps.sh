#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages listed in system-packages.txt that are missing.
set -eu
here=$(dirname "$0")
pkgs=$(grep -v '^#' "$here/system-packages.txt" | awk 'NF {print $1}' | sort -u)
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "system packages: all present"
	exit 0
fi
echo "system packages: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
