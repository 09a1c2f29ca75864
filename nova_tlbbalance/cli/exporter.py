# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance exporter``: Prometheus metrics of this host's VMs.

A background thread collects every ``--interval`` seconds over one
long-lived libvirt connection (nova_tlbbalance.exporter.Poller); the
HTTP(S) server (nova_tlbbalance.exporter_http) answers every scrape from
the last collection. Sends no QEMU monitor command to a domain without a
tlbbalance policy; KVM's statistics come from libvirt's domain
statistics. Both modules are imported only when this command runs: every
``tlbbalance`` command builds this parser, and prometheus_client costs
~40 ms of imports.
"""

import argparse
import os
import socket
import sys

from nova_tlbbalance.cli import _common
from nova_tlbbalance.probes import libvirt_conn
from nova_tlbbalance.probes import verdict

DEFAULT_PORT = 9788


def port(text):
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            '%r is not a TCP port (0-65535; 0: any free port)' % text)
    return value


def listen_address(text):
    """An IP address or host name; ``[::1]`` as well as ``::1``."""
    addr = text.strip()
    if addr.startswith('[') and addr.endswith(']'):
        addr = addr[1:-1]
    if not addr or any(c.isspace() for c in addr) or '/' in addr:
        raise argparse.ArgumentTypeError(
            '%r is not an address to listen on (an IPv4 or IPv6 address '
            'or a host name, e.g. 127.0.0.1 or ::1)' % text)
    return addr


def positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if value <= 0:
            raise argparse.ArgumentTypeError('%r: expected a number above 0'
                                             % text)
        return value
    return parse


def register(sub):
    p = sub.add_parser('exporter', help='serve status as Prometheus metrics')
    _common.add_source_options(p)
    p.add_argument('--listen', default='127.0.0.1', type=listen_address,
                   help='address to bind, IPv4 or IPv6 (default '
                   '%(default)s: loopback)')
    p.add_argument('--port', type=port, default=DEFAULT_PORT,
                   help='port (default %(default)s)')
    p.add_argument('--web-config', metavar='FILE',
                   help='TLS and basic authentication, in the Prometheus '
                   'exporter-toolkit web configuration format')
    p.add_argument('--interval', type=positive(float), default=15.0,
                   help='seconds between collections (default %(default)s); '
                   'scrapes are answered from the last one')
    p.add_argument('--timeout', type=positive(float), default=10.0,
                   help='seconds a connection may take to send a request '
                   'head, finish its TLS handshake or take an answer; an '
                   'idle kept-alive connection is closed after it '
                   '(default %(default)s)')
    p.add_argument('--max-connections', type=positive(int), default=None,
                   help='open connections at most; at the bound the one '
                   'idle the longest is closed (default: 1024, or less '
                   'under a low open-file limit)')
    p.add_argument('--user', metavar='NAME',
                   help='serve HTTP in a child process running as this '
                   'user (e.g. nobody): the collector keeps the privileges '
                   'it needs for /proc and libvirt, the code that parses '
                   'requests from the network has none')
    p.add_argument('--once', action='store_true',
                   help='collect once, print the metrics to stdout and exit '
                   '(2 when libvirt cannot be reached)')
    p.set_defaults(func=run)


def gather_for(args):
    """``gather(conn, host)`` -> (reports, verdicts) of the Poller: no
    monitor command to an untagged domain, KVM stats from libvirt's
    domain statistics, gpa2hva once per VM start (the Poller's cache)."""
    from nova_tlbbalance import modclient
    from nova_tlbbalance.probes import vmreport

    def roots():
        return vmreport.Roots(run_dir=args.run_dir,
                              configfs=modclient.root_dir(args.configfs))

    def host_facts():
        r = roots()
        return vmreport.host_facts(r, modclient.Client(r.configfs))

    def gather(poller):
        def one(conn, host):
            _, reps = vmreport.collect(
                roots(), conn=conn, host=host, monitor=not args.no_monitor,
                tagged_only=True, monitor_for=poller.monitor_for,
                domain_stats=True)
            verdicts = {r.name: verdict.reasons(r, host=host) for r in reps
                        if r.managed}
            return reps, verdicts
        return one
    return gather, host_facts


def poller_for(args):
    from nova_tlbbalance import exporter
    gather, host_facts = gather_for(args)
    poller = exporter.Poller(None, host_facts,
                             lambda: libvirt_conn.Connection(args.uri),
                             interval=args.interval)
    poller.gather = gather(poller)
    return poller


def account(name):
    """(uid, gid) of user ``name``; an error naming it."""
    import pwd
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        raise ValueError('--user %s: no such user' % name) from None
    if pw.pw_uid == 0:
        raise ValueError('--user %s: that is root; name an unprivileged '
                         'user (e.g. nobody)' % name)
    return pw.pw_uid, pw.pw_gid


def drop_to(uid, gid):
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise SystemExit('tlbbalance exporter: could not drop to uid %d'
                         % uid)
    try:        # can never be root again (checked, not assumed)
        os.setuid(0)
    except PermissionError:
        return
    raise SystemExit('tlbbalance exporter: uid 0 could be regained')


def serve_in_child(srv, poller, uid, gid, started):
    """Fork: the child drops to ``uid``/``gid`` and serves what the
    parent writes into a pipe after each collection; the parent (root)
    only collects. Either one ends when the other does."""
    import asyncio
    import signal
    import threading

    from nova_tlbbalance import exporter

    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(wfd)
            drop_to(uid, gid)
            holder = {'snap': None}
            srv.snapshot = lambda: holder['snap']

            async def serve():
                # Both ends go through the loop itself: SIGTERM through
                # its signal handler (a wakeup fd, so a signal caught by
                # the reader thread still wakes a loop idle in epoll),
                # the parent's end (EOF) through call_soon_threadsafe.
                loop = asyncio.get_running_loop()
                loop.add_signal_handler(signal.SIGTERM, srv.close)

                def read():
                    with os.fdopen(rfd, 'rb') as f:
                        while True:
                            snap = exporter.Snapshot.read_from(f)
                            if snap is None:
                                break
                            holder['snap'] = snap
                    try:
                        loop.call_soon_threadsafe(srv.close)  # parent gone
                    except RuntimeError:    # the loop ended first
                        pass
                threading.Thread(target=read, daemon=True).start()
                await srv.serve(started)
            asyncio.run(serve())
        except KeyboardInterrupt:
            pass
        except BaseException as exc:    # noqa: B902 - say it, then exit
            sys.stderr.write('tlbbalance exporter (server): %r\n' % exc)
            code = 1
        finally:
            os._exit(code)
    os.close(rfd)
    for sock in srv.sockets:
        sock.close()
    out = os.fdopen(wfd, 'wb')
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        while True:
            poller.step()
            try:
                out.write(poller.snapshot.to_bytes())
                out.flush()
            except BrokenPipeError:     # the server's end is closed
                return fail('the HTTP server process ended')
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return fail('the HTTP server process ended')
            if poller.wait():
                break
    except KeyboardInterrupt:
        pass
    finally:
        try:
            out.close()
        except OSError:
            pass
        try:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        poller.stop()
    return 0


def fail(msg):
    sys.stderr.write('tlbbalance exporter: %s\n' % msg)
    return 2


def run(args):
    import asyncio

    from nova_tlbbalance import exporter_http

    poller = poller_for(args)
    if args.once:
        snap = poller.collect_once()
        poller.stop()
        sys.stdout.write(snap.text())
        if not poller.state.up:
            return fail(poller.state.error or 'libvirt unreachable')
        return 0

    web = None
    if args.web_config:
        try:
            web = exporter_http.WebConfig.load(args.web_config)
        except exporter_http.ConfigError as exc:
            return fail(str(exc))
        except ImportError as exc:
            return fail('web config %s: basic_auth_users needs bcrypt (%s)'
                        % (args.web_config, exc))
    srv = exporter_http.Server(
        lambda: poller.snapshot, args.listen, args.port, web,
        max_connections=(args.max_connections
                         or exporter_http.default_max_connections()),
        timeout=args.timeout)
    ids = None
    if args.user:
        try:
            ids = account(args.user)
        except ValueError as exc:
            return fail(str(exc))
    try:
        srv.bind()
    except socket.gaierror as exc:
        return fail('--listen %s: not an address of this host (%s)'
                    % (args.listen, exc.strerror or exc))
    except OSError as exc:
        return fail('cannot listen on %s port %d: %s'
                    % (args.listen, args.port, exc.strerror or exc))

    def started():
        sys.stderr.write('tlbbalance exporter on %s%s\n' % (
            srv.url(), ' (served as %s)' % args.user if ids else ''))
        sys.stderr.flush()
    if ids:
        return serve_in_child(srv, poller, ids[0], ids[1], started)
    poller.start()
    try:
        asyncio.run(srv.serve(started))
    except KeyboardInterrupt:
        pass
    finally:
        poller.stop(timeout=5)
    return 0
