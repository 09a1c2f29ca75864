#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Run one command in the kvm host's node:
``nodeexec.py SOCK [--host NAME --log LOG] -- ARGV``.

The ``exec`` prefix of the kvm host in cloud.json: it asks nodekeeper.py
(over its unix socket SOCK) to run ARGV through the node's agent, prints
the command's stdout and stderr and exits with its status (125: the node
or the keeper is not there; stderr then names the compute host NAME and
the keeper's LOG, which says how the node died). Only the standard
library.
"""

import json
import socket
import sys

# The node runs commands one at a time; one may wait behind another
# (each takes 1-10 s under TCG at load 8).
TIMEOUT = 600


def main(argv):
    opts = {}
    rest = argv[1:]
    while len(rest) >= 2 and rest[0] in ('--host', '--log'):
        opts[rest[0]] = rest[1]
        rest = rest[2:]
    if not argv or len(rest) < 2 or rest[0] != '--':
        print('usage: nodeexec.py SOCK [--host NAME --log LOG] -- ARGV...',
              file=sys.stderr)
        return 2
    sock_path, cmd = argv[0], rest[1:]

    def down(why):
        print('nodeexec: the node of compute host %s is down (%s: %s); '
              'its keeper\'s log says why: %s' % (
                  opts.get('--host', '?'), sock_path, why,
                  opts.get('--log', '?')), file=sys.stderr)
        return 125
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(TIMEOUT)
    try:
        s.connect(sock_path)
        s.sendall((json.dumps({'argv': cmd, 'timeout': TIMEOUT - 60})
                   + '\n').encode())
        buf = b''
        while not buf.endswith(b'\n'):
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
    except OSError as e:
        return down(e)
    if not buf.strip():
        return down('no answer')
    reply = json.loads(buf)
    sys.stdout.write(reply.get('stdout', ''))
    sys.stderr.write(reply.get('stderr', ''))
    rc = reply.get('rc', 125)
    return rc if 0 <= rc < 256 else 125


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
