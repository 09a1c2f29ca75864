"""The node's end of a virtio-serial port, found by name (agent.py,
relay.py: both run inside the node with Debian's python3)."""

import glob
import time


def find_port(name, who, tries=100, interval=0.1):
    """/dev/vportNpM of the port QEMU named ``name`` (-device
    virtserialport,name=...); exits naming ``who`` if it never shows up
    (tries x interval: 10 s)."""
    for _ in range(tries):
        for name_file in glob.glob('/sys/class/virtio-ports/*/name'):
            with open(name_file) as f:
                if f.read().strip() == name:
                    return '/dev/' + name_file.split('/')[-2]
        time.sleep(interval)
    raise SystemExit('%s: no virtio-serial port named %s' % (who, name))
