#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Keeps the kvm compute host's node (tools/node) running for the cloud.

Boots a node (a Debian kernel under QEMU TCG, real KVM inside, libvirtd,
tlbbalance.ko and the hook) with the cloud's instances directory shared
writable at its own path and libvirtd relayed to a host unix socket over a
virtio-serial port (nova-compute's ``connection_uri``). The node's agent
takes one connection: this process holds it and serves ``--agent-sock``
to any number of clients (nodeexec.py, the ``exec`` prefix of cloud.json),
one command at a time. When the node is ready it writes ``--ready`` (JSON:
boot time, kernel, whether the module is loaded). SIGTERM powers the node
off (its domains are destroyed, their hooks run) and exits.

Exits non-zero when the node dies: the cloud's liveness checks then name
it.
"""

import argparse
import json
import os
import signal
import socketserver
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'node'))

import node as nodelib  # noqa: E402

# A boot reaches "ready" in 15-60 s on a quiet machine; at load 8 it took
# up to 3 minutes (docs/node.md); one hung boot is retried.
BOOT_TIMEOUT = 300
BOOT_ATTEMPTS = 2


def say(msg):
    print('[nodekeeper %s] %s' % (time.strftime('%H:%M:%S'), msg),
          flush=True)


class Keeper:

    def __init__(self, args):
        self.args = args
        self.node = None
        self.lock = threading.RLock()
        self.stopping = False

    def boot(self):
        a = self.args
        for attempt in range(1, BOOT_ATTEMPTS + 1):
            n = nodelib.Node(
                kernel=a.kernel, mem_mb=a.mem, keep=True,
                boot_timeout=BOOT_TIMEOUT, hostname=a.name,
                shares=[(a.instances, a.instances)],
                libvirt_relay=a.relay,
                hook_log='/tlbb-io/hook.jsonl', own_session=True,
                run_dir=os.path.join(a.run_dir, 'boot%d' % attempt))
            t0 = time.monotonic()
            try:
                n.start()
                break
            except nodelib.NodeError as e:
                say('boot attempt %d failed: %s' % (attempt, e))
                if n.alive():
                    n._kill()
                if attempt == BOOT_ATTEMPTS:
                    raise
        self.node = n
        took = time.monotonic() - t0
        loaded = n.run('test -d /sys/kernel/config/tlbbalance').rc == 0
        facts = {'boot_seconds': round(took, 1),
                 'kernel': n.ready['kernel'],
                 'boot_steps': n.ready['boot'],
                 'module_loaded': loaded,
                 'run_dir': n.run_dir,
                 'hook_log': os.path.join(n.io_dir, 'hook.jsonl'),
                 'console': n.console}
        tmp = a.ready + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(facts, f, indent=1)
        os.rename(tmp, a.ready)
        say('node %s ready in %.1f s (kernel %s, module loaded: %s)'
            % (a.name, took, facts['kernel'], loaded))

    def run(self, req):
        with self.lock:
            if self.node is None or not self.node.alive():
                return {'rc': 125, 'stdout': '',
                        'stderr': 'nodekeeper: the node of compute host %s '
                                  'is not running\n' % self.args.name}
            try:
                # a late answer fails this command, as before; the
                # compute host is not stopped for it (no rerun here)
                res = self.node.run(req['argv'],
                                    timeout=int(req.get('timeout', 300)),
                                    input=req.get('input', ''),
                                    hung_is_dead=False)
            except nodelib.NodeError as e:
                return {'rc': 125, 'stdout': '',
                        'stderr': 'nodekeeper: %s\n' % e}
            return {'rc': res.rc, 'stdout': res.stdout,
                    'stderr': res.stderr}

    def stop(self, *_):
        if self.stopping:
            return
        self.stopping = True
        say('powering the node off')
        # a command in flight holds the agent for at most its timeout:
        # wait 30 s for it, then kill the node rather than mix replies
        got = self.lock.acquire(timeout=30)
        n = self.node
        if n is not None and n.alive():
            if not got:
                say('a command still runs in the node: killing it')
                n._kill()
            else:
                try:
                    n.poweroff(0, timeout=90)
                    say('node powered off in %.1f s'
                        % n.timings['poweroff'])
                except nodelib.NodeError as e:
                    say('power-off: %s' % e)
                    n._kill()
        os._exit(0)


def serve(keeper, path):
    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            line = self.rfile.readline()
            try:
                req = json.loads(line)
                reply = keeper.run(req)
            except (ValueError, KeyError) as e:
                reply = {'rc': 2, 'stdout': '',
                         'stderr': 'nodekeeper: bad request: %s\n' % e}
            self.wfile.write((json.dumps(reply) + '\n').encode())

    class Server(socketserver.ThreadingMixIn,
                 socketserver.UnixStreamServer):
        daemon_threads = True

    if os.path.exists(path):
        os.unlink(path)
    srv = Server(path, Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--name', required=True, help='host name in the node')
    p.add_argument('--run-dir', required=True)
    p.add_argument('--instances', required=True)
    p.add_argument('--relay', required=True)
    p.add_argument('--agent-sock', required=True)
    p.add_argument('--ready', required=True)
    p.add_argument('--kernel', default='6.1')
    p.add_argument('--mem', type=int, default=2048)
    args = p.parse_args()
    keeper = Keeper(args)
    signal.signal(signal.SIGTERM, keeper.stop)
    signal.signal(signal.SIGINT, keeper.stop)
    try:
        keeper.boot()
    except nodelib.NodeError as e:
        say('the node did not come up: %s' % e)
        return 1
    serve(keeper, args.agent_sock)
    while True:
        time.sleep(2)
        with keeper.lock:
            alive = keeper.node.alive()
        if not alive and not keeper.stopping:
            # the cause last: a reader of the log's tail sees it
            say('the console (%s) ends:\n%s' % (
                keeper.node.console, keeper.node.console_tail(10)))
            say('the node of compute host %s died (QEMU exit %s)' % (
                args.name, keeper.node.proc.returncode))
            return 1


if __name__ == '__main__':
    sys.exit(main())
