#!/usr/bin/env python3
"""Benchmark: the time the tlbbalance hook adds to `virsh start`.

One run, side by side: libvirtd with the hook installed and without it
(hooks are read when libvirtd starts, so the daemon is restarted between
the two), alternating A/B rounds so drift on a shared machine hits both.
The same tagged TCG domain (256 MiB THP-backed, immediate allocation,
XML from the driver plugin's code) is started and destroyed each time.
Also prints the hook's own per-phase times from its log, and the cost of
the hook process for an untagged domain (its fast path).

Run as root (its libvirtd runs in a private mount namespace, beside
any other):
    python3 tools/bench/hook_start_time.py [--runs 5] [--rounds 2]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import _common
from _common import libvirthost


def start_stop(host, name, runs):
    times = []
    for _ in range(runs):
        t0 = time.monotonic()
        host.virsh('start', name)
        times.append(time.monotonic() - t0)
        host.virsh('destroy', name)
    return times


def hook_process_times(python, hook, xml, n=10):
    out = []
    for _ in range(n):
        t0 = time.monotonic()
        subprocess.run([hook, 'bench', 'start', 'begin', '-'], input=xml,
                       capture_output=True, check=True,
                       env={'PATH': '/usr/bin:/bin'})
        out.append(time.monotonic() - t0)
    return out


def main():
    print('load average at start: %s' % _common.loadavg())
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=5,
                    help='starts per round and mode')
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--memory-mib', type=int, default=256)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix='tlbb-bench-hook-')
    log = os.path.join(work, 'hook.jsonl')
    name = 'tlbbench-start'
    xml = _common.tagged_xml(name, args.memory_mib)
    res = {'with hook': [], 'without hook': []}
    for rnd in range(args.rounds):
        for mode in ('with hook', 'without hook'):
            h = libvirthost.LibvirtHost(
                os.path.join(work, '%s-%d' % (mode.split()[0], rnd)),
                hook=(mode == 'with hook'),
                hook_settings={'log_file': log, 'syslog': ''},
                cache_dir=libvirthost.CAPS_CACHE)
            with h:
                h.define(xml, name)
                h.virsh('start', name)          # warm-up, not counted
                h.virsh('destroy', name)
                res[mode] += start_stop(h, name, args.runs)
            print('round %d %-12s done' % (rnd + 1, mode), flush=True)
    with open(log) as f:
        recs = [json.loads(x) for x in f if x.strip()]
    # untagged fast path vs tagged 'start' phase, as whole processes
    inst = os.path.join(work, 'hook')
    from nova_tlbbalance.hook import install
    install.install(inst, sys.executable, {'syslog': '',
                                           'log_file': os.devnull},
                    conf=os.path.join(work, 'hook.conf'))
    untagged = libvirthost.plain_domain('bench', 64).encode()
    tagged = _common.tagged_xml('bench', 64).encode()
    t_untagged = hook_process_times(sys.executable, inst, untagged)
    t_tagged = hook_process_times(sys.executable, inst, tagged)

    print()
    print('virsh start of a tagged %d MiB TCG domain, %d rounds x %d runs'
          % (args.memory_mib, args.rounds, args.runs))
    for mode in ('without hook', 'with hook'):
        print('  %-13s %s' % (mode, _common.fmt(res[mode])))
    a = statistics.median(res['with hook'])
    b = statistics.median(res['without hook'])
    print('  hook adds     %+.3f s to the median start (%+.1f %%)'
          % (a - b, 100 * (a - b) / b))
    print('hook phases as logged by the hook (in-process time):')
    for phase in ('prepare', 'start', 'started', 'stopped', 'release'):
        ms = [r['elapsed_ms'] for r in recs if r['phase'] == phase]
        if ms:
            print('  %-8s %s' % (phase, _common.fmt(ms, 'ms')))
    print('hook process (interpreter start + work), `start` phase:')
    print('  untagged domain %s' % _common.fmt(t_untagged, 'ms', 1000))
    print('  tagged domain   %s' % _common.fmt(t_tagged, 'ms', 1000))
    print('load average at end: %s' % _common.loadavg())
    return 0


if __name__ == '__main__':
    sys.exit(main())
