# SPDX-License-Identifier: Apache-2.0
#
# Sourced by fetch.sh and buildroot.sh: host_mirror NAME prints the first
# URI of this machine's own Debian sources (deb822 .sources or one-line
# .list form) whose last path element is NAME (debian, debian-security),
# or nothing. Another suite's lists are taken from the mirror the machine
# already uses; no mirror is named in the tree.
host_mirror() {
	{ sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null
	  sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/p' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
	} | tr ' ' '\n' | grep -E "/$1/?\$" | head -n 1 || true
}
