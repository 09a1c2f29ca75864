#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark: `tlbbalance exporter` over many running VMs (default 200).

Real domains under a real libvirtd (private mount namespace, hook
installed): N TCG domains of 16 MiB started paused, half tagged (the
driver plugin's XML) and half untagged. One `tlbbalance exporter`
(background collection every --interval seconds) runs in the
namespace. Measured:

1. a scrape served from the cache: sequential GETs of /metrics (gzip, as
   Prometheus asks), each on a new connection;
2. 1000 concurrent scrapes (curl, all connections opened at once):
   latency of each from connect to last byte, p50/p99/max, and
   libvirtd's client count sampled throughout (`virt-admin
   srv-clients-list libvirtd`) plus the exporter's own
   tlbbalance_libvirt_connections_total;
3. 300 idle connections (a request head never finished) open while a
   scrape is timed, and the exporter's CPU use over 5 s with them open;
   the same again for an exporter started with a 256-file limit (the
   limit under which the old exporter stopped answering);
4. libvirt's domain logs: domains marked "custom-monitor" tainted,
   tagged and untagged.

Run as root, from the repo root, with an interpreter that has
libvirt-python and lxml:
    .tox/integration/bin/python tools/bench/exporter_vms.py [--vms 200]
"""

import argparse
import asyncio
import gzip
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time

import _common
from _common import libvirthost

ENV = dict(os.environ, PYTHONPATH=_common.TOP)


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100.0 * (len(v) - 1))))]


def summary(values):
    ms = [1000 * x for x in values]
    return ('p50 %.1f ms, p99 %.1f ms, max %.1f ms, n=%d'
            % (pct(ms, 50), pct(ms, 99), max(ms), len(ms)))


class Exporter:
    def __init__(self, h, work, name, args, prefix=()):
        self.log = open(os.path.join(work, name + '.log'), 'w+')
        self.proc = subprocess.Popen(
            list(prefix) + h.ns_prefix() + [
                sys.executable, '-m', 'nova_tlbbalance', 'exporter',
                '--port', '0'] + args,
            env=ENV, stdout=subprocess.DEVNULL, stderr=self.log)
        end = time.monotonic() + 180
        self.url = None
        while self.url is None:
            if time.monotonic() > end or self.proc.poll() is not None:
                raise SystemExit('exporter did not start: %s'
                                 % self.stderr()[-2000:])
            m = re.search(r'on (http://([0-9.]+):([0-9]+)/metrics)',
                          self.stderr())
            if m:
                self.host, self.port = m.group(2), int(m.group(3))
                self.url = m.group(1)
            time.sleep(0.1)

    def stderr(self):
        self.log.seek(0)
        return self.log.read()

    def cpu_seconds(self):
        """CPU time of the process serving HTTP: the exporter, or its
        HTTP child with --user (the collector's CPU left out)."""
        pid = self.proc.pid
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            pids = [int(k) for k in f.read().split()] or [pid]
        total = 0
        for p in pids:
            with open('/proc/%d/stat' % p) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        return total / os.sysconf('SC_CLK_TCK')

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


REQUEST = (b'GET /metrics HTTP/1.1\r\nHost: bench\r\n'
           b'Accept-Encoding: gzip\r\nConnection: close\r\n\r\n')


async def one_scrape(host, port, timeout=60):
    t0 = time.monotonic()
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(host, port), timeout)
    try:
        writer.write(REQUEST)
        head = await asyncio.wait_for(reader.readuntil(b'\r\n\r\n'),
                                      timeout)
        status = int(head.split(b' ', 2)[1])
        length = int(re.search(rb'Content-Length: (\d+)', head).group(1))
        body = await asyncio.wait_for(reader.readexactly(length), timeout)
    finally:
        writer.close()
    return time.monotonic() - t0, status, body


def scrape(ex):
    took, status, body = asyncio.run(one_scrape(ex.host, ex.port))
    assert status == 200, status
    return took, gzip.decompress(body).decode()


def burst(url, n, work, procs=4):
    """``n`` scrapes at once: ``procs`` curl processes (libcurl's multi
    interface, C: the client adds little to what is measured), each
    with n/procs transfers in parallel on fresh connections (curl caps
    one process at 300). [(http code, seconds)] per transfer."""
    cmds = []
    for i in range(procs):
        cfg = os.path.join(work, 'curl-%d.cfg' % i)
        with open(cfg, 'w') as f:
            for _ in range(n // procs + (i < n % procs)):
                f.write('url = "%s"\noutput = "/dev/null"\n' % url)
        cmds.append(['curl', '-sS', '--parallel', '--parallel-immediate',
                     '--parallel-max', '300', '--max-time', '60',
                     '-H', 'Accept-Encoding: gzip',
                     '-w', '%{http_code} %{time_total}\\n', '-K', cfg])
    ps = [subprocess.Popen(c, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
          for c in cmds]
    out = []
    for p in ps:
        stdout, _ = p.communicate(timeout=300)
        out += [(int(c), float(t)) for c, t in
                (ln.split() for ln in stdout.splitlines())]
    return out


def metric(text, name):
    m = re.search(r'^%s(?:\{[^}]*\})? (\S+)$' % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def libvirt_clients(h):
    p = subprocess.run(h.ns_prefix() + ['virt-admin', 'srv-clients-list',
                                        'libvirtd'],
                       capture_output=True, text=True, timeout=30)
    if p.returncode:
        return None
    return sum(1 for ln in p.stdout.splitlines()
               if re.match(r'\s*\d+\s', ln))


def idle(ex, n):
    socks = []
    for _ in range(n):
        s = socket.create_connection((ex.host, ex.port), timeout=30)
        s.sendall(b'GET /metrics HTTP/1.1\r\n')
        socks.append(s)
    return socks


def idle_figures(ex, n):
    socks = idle(ex, n)
    try:
        time.sleep(0.5)
        took, text = scrape(ex)
        cpu0, t0 = ex.cpu_seconds(), time.monotonic()
        time.sleep(5)
        cpu = (ex.cpu_seconds() - cpu0) / (time.monotonic() - t0)
        alive = 0
        for s in socks:
            s.setblocking(False)
            try:
                alive += s.recv(1) != b''
            except BlockingIOError:
                alive += 1
            except OSError:
                pass
        return took, cpu, alive, text
    finally:
        for s in socks:
            s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--vms', type=int, default=200)
    ap.add_argument('--untagged', type=float, default=0.5,
                    help='share of untagged domains (default 0.5)')
    ap.add_argument('--memory-mib', type=int, default=16)
    ap.add_argument('--interval', type=float, default=15)
    ap.add_argument('--concurrent', type=int, default=1000)
    ap.add_argument('--idle', type=int, default=300)
    ap.add_argument('--scrapes', type=int, default=50)
    ap.add_argument('--bursts', type=int, default=3,
                    help='rounds of concurrent scrapes (default 3)')
    ap.add_argument('--user', default=None,
                    help='run the exporter with --user USER (what the '
                    'systemd unit does: HTTP in a child as that user)')
    args = ap.parse_args()
    # the client side of the concurrent scrapes and idle connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print('load average at start: %s' % _common.loadavg(), flush=True)
    work = _common.workdir('tlbb-bench-exporter-')
    h = libvirthost.LibvirtHost(work, hook=True,
                                hook_settings={'syslog': ''},
                                cache_dir=libvirthost.CAPS_CACHE)
    n_untagged = int(round(args.vms * args.untagged))
    with h:
        t0 = time.monotonic()
        names = []
        for i in range(args.vms):
            tagged = i >= n_untagged
            name = 'tlbexp-%s-%03d' % ('t' if tagged else 'u', i)
            xml = (_common.tagged_xml(name, args.memory_mib) if tagged else
                   libvirthost.plain_domain(name,
                                            memory_mib=args.memory_mib,
                                            vcpus=1))
            h.define(xml, name, start_paused=True)
            names.append(name)
        print('%d domains (%d untagged) started paused in %.1f s, load '
              'average %s' % (args.vms, n_untagged, time.monotonic() - t0,
                              _common.loadavg()), flush=True)
        extra = ['--user', args.user] if args.user else []
        ex = Exporter(h, work, 'exporter',
                      ['--interval', str(args.interval)] + extra)
        try:
            # the first collection, then one more (cached gpa2hva)
            end = time.monotonic() + 600
            while True:
                _, text = scrape(ex)
                if (metric(text, 'tlbbalance_collections_total') or 0) >= 2:
                    break
                if time.monotonic() > end:
                    raise SystemExit('no second collection in 600 s')
                time.sleep(1)
            vms = len(set(re.findall(
                r'^tlbbalance_vm_managed\{[^}]*vm="(tlbexp-[^"]+)"', text,
                re.M)))
            print('exporter: %d VMs in a scrape, %d series, body %d '
                  'bytes; last collection %.2f s, %d monitor commands, '
                  '%d libvirt connection(s)' % (
                      vms, sum(1 for ln in text.splitlines()
                               if ln and ln[0] != '#'), len(text),
                      metric(text, 'tlbbalance_collection_duration_seconds'),
                      metric(text, 'tlbbalance_monitor_commands_total'),
                      metric(text, 'tlbbalance_libvirt_connections_total')),
                  flush=True)

            seq = [scrape(ex)[0] for _ in range(args.scrapes)]
            print('1. cached scrape, sequential, new connection each: %s '
                  '(load %s)' % (summary(seq), _common.loadavg()),
                  flush=True)

            for round_ in range(args.bursts):
                counts = []
                stop = threading.Event()

                def sample():
                    while not stop.is_set():
                        c = libvirt_clients(h)
                        if c is not None:
                            counts.append(c)
                        stop.wait(0.2)
                before = libvirt_clients(h)
                sampler = threading.Thread(target=sample)
                sampler.start()
                cpu0 = ex.cpu_seconds()
                t0 = time.monotonic()
                got = burst(ex.url, args.concurrent, work)
                wall = time.monotonic() - t0
                cpu = ex.cpu_seconds() - cpu0
                stop.set()
                sampler.join()
                times = [t for c, t in got if c == 200]
                _, text = scrape(ex)
                print('2.%d %d concurrent scrapes (4 curl processes x %d in '
                      'parallel): %d answered 200, %d not; %s; all done in '
                      '%.2f s, exporter CPU %.2f s; libvirtd clients before '
                      '%s, max during %s (n=%d samples; the exporter holds '
                      'one); tlbbalance_libvirt_connections_total %d (load %s)'
                      % (round_ + 1, args.concurrent, args.concurrent // 4,
                         len(times), args.concurrent - len(times),
                         summary(times) if times else '-', wall, cpu, before,
                         max(counts) if counts else '?', len(counts),
                         metric(text, 'tlbbalance_libvirt_connections_total'),
                         _common.loadavg()), flush=True)

            took, cpu, alive, _ = idle_figures(ex, args.idle)
            print('3. %d idle connections open: a scrape took %.1f ms; '
                  'exporter CPU %.1f %% over 5 s; %d of them still open '
                  '(load %s)' % (args.idle, 1000 * took, 100 * cpu, alive,
                                 _common.loadavg()), flush=True)
        finally:
            ex.stop()

        # the same with a 256-file limit (the setting)
        ex = Exporter(h, work, 'exporter-256',
                      ['--interval', str(args.interval)] + extra,
                      prefix=['prlimit', '--nofile=256:256', '--'])
        try:
            end = time.monotonic() + 600
            while metric(scrape(ex)[1], 'tlbbalance_collections_total') \
                    is None or not metric(scrape(ex)[1], 'tlbbalance_up'):
                if time.monotonic() > end:
                    raise SystemExit('no collection in 600 s')
                time.sleep(1)
            took, cpu, alive, _ = idle_figures(ex, args.idle)
            print('3b. open-file limit 256 (--max-connections defaults to '
                  '192): %d idle connections: a scrape took %.1f ms, '
                  'exporter CPU %.1f %% over 5 s, %d idle ones still '
                  'open (the longest idle closed to make room) (load %s)'
                  % (args.idle, 1000 * took, 100 * cpu, alive,
                     _common.loadavg()), flush=True)
        finally:
            ex.stop()

        tainted = {'t': 0, 'u': 0}
        for name in names:
            path = h.path('/var/log/libvirt/qemu/%s.log' % name)
            with open(path, errors='replace') as f:
                if 'custom-monitor' in f.read():
                    tainted[name.split('-')[1]] += 1
        print('4. "custom-monitor" taint in libvirt domain logs: %d of %d '
              'untagged, %d of %d tagged (a tagged VM: its one gpa2hva per '
              'start)' % (tainted['u'], n_untagged, tainted['t'],
                          args.vms - n_untagged))
    print('load average at end: %s' % _common.loadavg())
    return 0 if tainted['u'] == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
