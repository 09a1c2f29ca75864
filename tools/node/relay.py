#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Relay inside the node: virtio-serial port ``tlbb.libvirt`` <-> libvirtd.

Started by node-init.sh when the launcher asked for it (tools/cloud's kvm host:
nova-compute on the host drives this node's libvirtd with
``qemu+unix:///system?socket=<host end of the port>``). A port is one byte
stream: it carries one client at a time
(docs/design/platform.md#driving-a-nodes-libvirtd-from-the-host). The session
with libvirtd is opened when the first bytes arrive and closed when the host
end hangs up (a read of 0 bytes) or libvirtd closes it; the host side then
reconnects afresh.

Only the standard library: it runs under Debian's /usr/bin/python3.
"""

import os
import select
import socket
import sys
import time

import vport

PORT_NAME = 'tlbb.libvirt'
LIBVIRT_SOCK = '/run/libvirt/libvirt-sock'


def log(msg):
    print('relay: %s' % msg, flush=True)


def write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def main():
    fd = os.open(vport.find_port(PORT_NAME, 'relay'), os.O_RDWR)
    conn = None
    sessions = 0
    while True:
        rl = [fd] + ([conn] if conn else [])
        ready, _, _ = select.select(rl, [], [], 5.0)
        if fd in ready:
            data = os.read(fd, 1 << 16)
            if not data:
                # host end not connected (or just hung up)
                if conn:
                    log('host closed session %d' % sessions)
                    conn.close()
                    conn = None
                time.sleep(0.1)
                continue
            if conn is None:
                conn = socket.socket(socket.AF_UNIX)
                conn.connect(LIBVIRT_SOCK)
                sessions += 1
                log('session %d opened' % sessions)
            conn.sendall(data)
        if conn and conn in ready:
            data = conn.recv(1 << 16)
            if not data:
                log('libvirtd closed session %d' % sessions)
                conn.close()
                conn = None
                continue
            write_all(fd, data)


if __name__ == '__main__':
    sys.exit(main())
