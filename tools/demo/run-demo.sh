#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `make demo`: the main job, from a fresh Debian 12 machine (as root).
# Installs the Debian packages the repo lists, then runs tools/demo/demo.py:
# a compute node booted under QEMU, a VM from the driver plugin's XML in
# balance mode, `tlbbalance status` before and after the controller acts,
# stage-2 pages_2m following N_hl, and a plot in out/demo/demo.png.
set -eu
cd "$(dirname "$0")/../.."
t0=$(date +%s)

echo "== 0. system packages (tools/ci/install-system-deps.sh)"
if [ "$(id -u)" -ne 0 ]; then
	echo "make demo: run as root (it installs Debian packages and boots" \
	     "QEMU with the host's root file system shared read-only)" >&2
	exit 1
fi
tools/ci/install-system-deps.sh
t1=$(date +%s)

# Debian's python3: the one with python3-matplotlib (the plot). The node
# runs the working tree's code itself.
set +e
/usr/bin/python3 tools/demo/demo.py "$@"
rc=$?
set -e
t2=$(date +%s)
echo "   system packages             $((t1 - t0)) s"
echo "   make demo in all            $((t2 - t0)) s (exit status $rc)"
exit $rc
