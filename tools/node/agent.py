#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Command agent inside the node, on the virtio-serial port ``tlbb.agent``.

Started by node-init.sh once the node is ready. Speaks JSON lines:

  node -> host  {"event": "ready", "uptime": 9.8, "boot": [[t, step]...],
                 "errors": [...], "kernel": "6.1.0-56-amd64"}
  host -> node  {"id": 1, "op": "run", "argv": [...] | "sh": "...",
                 "timeout": 60, "input": "..."}
  node -> host  {"id": 1, "rc": 0, "stdout": "...", "stderr": "...",
                 "secs": 0.12, "timed_out": false}
  host -> node  {"id": 2, "op": "poweroff", "status": 0}
  node -> host  {"id": 2, "rc": 0}        (then the agent exits with status)

Commands run one at a time, as root, in the working tree. Only the standard
library: it runs under Debian's /usr/bin/python3 inside the node.
"""

import json
import os
import subprocess
import sys
import time

import vport

PORT_NAME = 'tlbb.agent'


def read_lines(fd):
    buf = b''
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:       # host side not connected: wait for it
            time.sleep(0.2)
            continue
        buf += chunk
        while b'\n' in buf:
            line, buf = buf.split(b'\n', 1)
            if line.strip():
                yield line


def send(fd, obj):
    data = (json.dumps(obj) + '\n').encode()
    while data:
        n = os.write(fd, data)
        data = data[n:]


def trace(msg):
    """One line on the node's console (the launcher's console.log)."""
    with open('/proc/uptime') as f:
        up = f.read().split()[0]
    try:
        with open('/dev/console', 'w') as f:
            f.write('tlbb-agent: [%s] %s\n' % (up, msg))
    except OSError:
        pass


def boot_info():
    steps = []
    try:
        with open('/run/tlbb/boot.log') as f:
            for line in f:
                t, _, what = line.strip().partition(' ')
                steps.append([float(t), what])
    except OSError:
        pass
    try:
        with open('/run/tlbb/errors') as f:
            errors = [ln.strip() for ln in f if ln.strip()]
    except OSError:
        errors = ['no /run/tlbb/errors']
    with open('/proc/uptime') as f:
        uptime = float(f.read().split()[0])
    return {'event': 'ready', 'uptime': uptime, 'boot': steps,
            'errors': errors, 'kernel': os.uname().release}


def run(req):
    argv = req.get('argv')
    shell = False
    if argv is None:
        argv = req['sh']
        shell = True
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, shell=shell, executable=(
            '/bin/bash' if shell else None), input=req.get('input', ''),
            capture_output=True, text=True, errors='replace',
            timeout=req.get('timeout'), cwd=os.environ.get('TLBB_REPO'))
        out = {'rc': p.returncode, 'stdout': p.stdout, 'stderr': p.stderr,
               'timed_out': False}
    except subprocess.TimeoutExpired as e:
        out = {'rc': -9, 'timed_out': True,
               'stdout': _text(e.stdout), 'stderr': _text(e.stderr)}
    except OSError as e:
        out = {'rc': 127, 'stdout': '', 'stderr': str(e), 'timed_out': False}
    out['secs'] = round(time.monotonic() - t0, 3)
    return out


def _text(data):
    if data is None:
        return ''
    if isinstance(data, bytes):
        return data.decode(errors='replace')
    return data


def main():
    port = vport.find_port(PORT_NAME, 'agent')
    fd = os.open(port, os.O_RDWR)
    send(fd, boot_info())
    for line in read_lines(fd):
        try:
            req = json.loads(line)
            op = req.get('op', 'run')
        except ValueError as e:
            send(fd, {'id': None, 'rc': 2, 'stderr': 'bad request: %s' % e})
            continue
        if op == 'poweroff':
            send(fd, {'id': req.get('id'), 'rc': 0})
            return int(req.get('status', 0)) & 0x7f
        if op == 'run':
            trace('run %s: %.200s'
                  % (req.get('id'), req.get('sh') or req.get('argv')))
            reply = run(req)
            trace('done %s: rc=%s in %.2f s' % (req.get('id'), reply['rc'],
                                                reply['secs']))
        else:
            reply = {'rc': 2, 'stderr': 'unknown op %r' % op}
        reply['id'] = req.get('id')
        send(fd, reply)


if __name__ == '__main__':
    sys.exit(main())
