#!/usr/bin/env python3
"""Benchmark: `tlbbalance status` over 50 running VMs.

Real domains, not synthetic processes: 50 tagged TCG domains (32 MiB THP,
immediate allocation, XML from the driver plugin's code) started paused
(`virsh start --paused`: QEMU is up with its RAM allocated and its vCPU
threads created, but burns no CPU), under a libvirtd with the hook
installed. Times the real CLI (`python -m nova_tlbbalance status --json`),
with the QEMU monitor queries (gpa2hva per RAM range, query-stats) and
without them (--no-monitor), and `verify`.

Run as root (its libvirtd runs in a private mount namespace, beside
any other):
    python3 tools/bench/status_50_vms.py [--vms 50] [--runs 5]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time

import _common
from _common import libvirthost


def timed(cmd, runs):
    out = []
    last = None
    for _ in range(runs):
        t0 = time.monotonic()
        last = subprocess.run(cmd, capture_output=True, text=True)
        out.append(time.monotonic() - t0)
    return out, last


def main():
    print('load average at start: %s' % _common.loadavg())
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--vms', type=int, default=50)
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--memory-mib', type=int, default=32)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix='tlbb-bench-status-')
    h = libvirthost.LibvirtHost(work, hook=True,
                                hook_settings={'syslog': ''},
                                cache_dir=libvirthost.CAPS_CACHE)
    with h:
        # the CLI runs beside that libvirtd, inside its namespace
        cli = h.ns_prefix() + [sys.executable, '-m', 'nova_tlbbalance']
        t0 = time.monotonic()
        for i in range(args.vms):
            name = 'tlbbench-%02d' % i
            h.define(_common.tagged_xml(name, args.memory_mib), name,
                     start_paused=True)
        print('%d domains started (paused) in %.1f s'
              % (args.vms, time.monotonic() - t0), flush=True)
        # untimed warm-up: libvirt logs a one-time "custom-monitor" taint
        # per domain on its first monitor command
        subprocess.run(cli + ['status', '--json'], capture_output=True)
        full, p = timed(cli + ['status', '--json'], args.runs)
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
        print()
        print('tlbbalance status over %d running domains (%d MiB each):'
              % (args.vms, args.memory_mib))
        print('  status --json               %s' % _common.fmt(full))
        print('  status --json --no-monitor  %s' % _common.fmt(quick))
        print('  status (table)              %s' % _common.fmt(table))
        print('  verify --no-module          %s (rc %d)'
              % (_common.fmt(ver), p.returncode))
        print('  per VM (status --json)      %.1f ms'
              % (1000 * sorted(full)[len(full) // 2] / args.vms))
        print('  reported: %d/%d with >= 99 %% huge coverage, %d/%d aligned'
              % (covered, args.vms, aligned, args.vms))
    print('load average at end: %s' % _common.loadavg())
    return 0


if __name__ == '__main__':
    sys.exit(main())
