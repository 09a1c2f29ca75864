# SPDX-License-Identifier: Apache-2.0
"""The node's end of a virtio-serial port, found by name (agent.py,
relay.py: both run inside the node with Debian's python3, the working tree
at its own path)."""

import glob
import os
import sys

# tools/, for tlbbwait (in the node the working tree is on Debian's python3
# path, node-init.sh's tlbb-node.pth; tools/ is not)
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tlbbwait import WaitTimeout, wait_until  # noqa: E402


def find_port(name, who, timeout=10, interval=0.1):
    """/dev/vportNpM of the port QEMU named ``name`` (-device
    virtserialport,name=...); exits naming ``who`` if it never shows up
    within timeout s."""
    def port():
        for name_file in glob.glob('/sys/class/virtio-ports/*/name'):
            with open(name_file) as f:
                if f.read().strip() == name:
                    return '/dev/' + name_file.split('/')[-2]
        return None
    try:
        return wait_until('virtio-serial port %s shows up' % name, port,
                          timeout, interval)
    except WaitTimeout as e:
        raise SystemExit('%s: %s' % (who, e))
