#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark: `tlbbalance status` over many running VMs (default 200).

Real domains, not synthetic processes: N tagged TCG domains (16 MiB THP,
immediate allocation, XML from the driver plugin's code) started paused
(`virsh start --paused`: QEMU is up with its RAM allocated and its vCPU
threads created, but burns no CPU), under a libvirtd with the hook
installed. Times the real CLI (`python -m nova_tlbbalance status --json`),
with the QEMU monitor queries (gpa2hva per RAM range, query-stats) and
without them (--no-monitor), and `verify`; and a Prometheus scrape of a
running `tlbbalance exporter` (HTTP GET /metrics, what Prometheus does
every interval). The goal
(docs/cli.md): 200 VMs answered in under 1 s, a scrape's budget.
Each domain costs ~40-60 MiB of host RAM (its QEMU and its guest RAM):
check `free -m` before asking for 200.

Run as root (its libvirtd runs in a private mount namespace, beside
any other):
    python3 tools/bench/status_vms.py [--vms 200] [--runs 5]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import _common
from _common import libvirthost


# the CLI from this checkout, whatever the interpreter has installed
ENV = dict(os.environ, PYTHONPATH=_common.TOP)


def timed(cmd, runs):
    out = []
    last = None
    for _ in range(runs):
        t0 = time.monotonic()
        last = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
        out.append(time.monotonic() - t0)
    return out, last


def scrapes(cli, runs):
    """Times of ``runs`` GETs of /metrics from one exporter process (after
    one untimed scrape), and the last body."""
    ex = subprocess.Popen(cli + ['exporter', '--port', '0'], env=ENV,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    try:
        # it prints its address once it listens
        line = ex.stderr.readline()
        m = re.search(r'http://([0-9.]+):([0-9]+)/metrics', line)
        if not m:
            raise SystemExit('exporter did not start: %r %s'
                             % (line, ex.stderr.read()[-2000:]))
        url = 'http://%s:%s/metrics' % m.groups()

        def get():
            with urllib.request.urlopen(url, timeout=60) as r:
                return r.read().decode()
        get()
        out = []
        for _ in range(runs):
            t0 = time.monotonic()
            body = get()
            out.append(time.monotonic() - t0)
        return out, body
    finally:
        ex.terminate()
        ex.wait(10)


def main():
    print('load average at start: %s' % _common.loadavg())
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--vms', type=int, default=200)
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--memory-mib', type=int, default=16)
    args = ap.parse_args()
    work = _common.workdir('tlbb-bench-status-')
    h = libvirthost.LibvirtHost(work, hook=True,
                                hook_settings={'syslog': ''},
                                cache_dir=libvirthost.CAPS_CACHE)
    with h:
        # the CLI runs beside that libvirtd, inside its namespace
        cli = h.ns_prefix() + [sys.executable, '-m', 'nova_tlbbalance']
        t0 = time.monotonic()
        for i in range(args.vms):
            name = 'tlbbench-%03d' % i
            h.define(_common.tagged_xml(name, args.memory_mib), name,
                     start_paused=True)
        print('%d domains started (paused) in %.1f s, load average %s'
              % (args.vms, time.monotonic() - t0, _common.loadavg()),
              flush=True)
        # untimed warm-up: libvirt logs a one-time "custom-monitor" taint
        # per domain on its first monitor command
        subprocess.run(cli + ['status', '--json'], capture_output=True,
                       env=ENV)
        full, p = timed(cli + ['status', '--json'], args.runs)
        if p.returncode:
            raise SystemExit('status --json exited %d:\n%s'
                             % (p.returncode, p.stderr[-3000:]))
        data = json.loads(p.stdout)
        vms = [v for v in data['vms'] if v['name'].startswith('tlbbench-')]
        assert len(vms) == args.vms, len(vms)
        covered = sum(1 for v in vms
                      if (v['coverage'] or {}).get('coverage', 0) >= 0.99)
        aligned = sum(1 for v in vms if v['aligned'])
        quick, _ = timed(cli + ['status', '--json', '--no-monitor'],
                         args.runs)
        table, _ = timed(cli + ['status'], args.runs)
        ver, p = timed(cli + ['verify', '--no-module'], args.runs)
        scrape, body = scrapes(cli, args.runs)
        scraped = len(set(re.findall(
            r'^tlbbalance_vm_managed\{[^}]*vm="(tlbbench-[0-9]+)"', body,
            re.M)))
        print()
        print('tlbbalance status over %d running domains (%d MiB each):'
              % (args.vms, args.memory_mib))
        print('  status --json               %s' % _common.fmt(full))
        print('  status --json --no-monitor  %s' % _common.fmt(quick))
        print('  status (table)              %s' % _common.fmt(table))
        print('  verify --no-module          %s (rc %d)'
              % (_common.fmt(ver), p.returncode))
        print('  exporter scrape (GET)       %s, %d VMs in it'
              % (_common.fmt(scrape), scraped))
        print('  per VM (status --json)      %.1f ms'
              % (1000 * sorted(full)[len(full) // 2] / args.vms))
        print('  reported: %d/%d with >= 99 %% huge coverage, %d/%d aligned'
              % (covered, args.vms, aligned, args.vms))
    print('load average at end: %s' % _common.loadavg())
    return 0


if __name__ == '__main__':
    sys.exit(main())
