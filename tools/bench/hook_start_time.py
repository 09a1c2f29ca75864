#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark: the time the tlbbalance hook adds to `virsh start`.

One run, side by side: three libvirtds up at once, without the hook,
with it, and with it and ``background = true`` (docs/hook.md; hooks are
read when libvirtd starts), and the same tagged TCG domain (256 MiB
THP-backed with the default policy, so faulted in on first touch; XML
from the driver plugin's code) started and destroyed on each in turn,
the order rotated every run, so drift on a shared machine hits all
alike. A fourth column starts the same domain with
``tlbbalance:prefault=true`` (``<allocation mode='immediate'>``) under
the libvirtd without hook: what pre-faulting the guest RAM costs
`virsh start`.

Prints the medians and their ratio, the hook's own per-phase times from
its log, and the whole hook process as libvirtd runs it (scrubbed
environment, domain XML on stdin) for each phase of a tagged domain,
``started`` against the real running QEMU, and for an untagged one. The
goals (docs/hook.md, "Cost"): under 100 ms added to the median
`virsh start` on a quiet machine, a tagged phase's whole process under
60 ms.

Run as root (its libvirtds run in private mount namespaces, beside
any other):
    python3 tools/bench/hook_start_time.py [--runs 12]

Its own log_file setting makes every phase also import json and write a
line (the per-phase times come from there): a little dearer than a hook
without one.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import _common
from _common import libvirthost

GOAL_ADDED_S = 0.100
GOAL_PHASE_MS = 60.0


def timed_start(host, name):
    t0 = time.monotonic()
    host.virsh('start', name)
    dt = time.monotonic() - t0
    host.virsh('destroy', name)
    return dt


def hook_process_ms(hook, name, op, sub, xml, n, env):
    """Wall time of the whole hook process, as libvirtd runs it."""
    out = []
    for _ in range(n):
        t0 = time.monotonic()
        p = subprocess.run([hook, name, op, sub, '-'], input=xml,
                           capture_output=True, env=env, timeout=60)
        out.append((time.monotonic() - t0) * 1000)
        if p.returncode != 0:
            raise RuntimeError('hook %s %s exited %d: %s' % (
                op, sub, p.returncode, p.stderr.decode()[-500:]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=12,
                    help='starts per libvirtd (alternating)')
    ap.add_argument('--process-runs', type=int, default=15,
                    help='hook processes timed per phase')
    ap.add_argument('--memory-mib', type=int, default=256)
    args = ap.parse_args()
    print('load average at start: %s' % _common.loadavg())
    work = _common.workdir('tlbb-bench-hook-')
    log = os.path.join(work, 'hook.jsonl')
    name = 'tlbbench-start'
    xml = _common.tagged_xml(name, args.memory_mib)
    hosts = {
        'without hook': libvirthost.LibvirtHost(
            os.path.join(work, 'without'), hook=False,
            cache_dir=libvirthost.CAPS_CACHE),
        'with hook': libvirthost.LibvirtHost(
            os.path.join(work, 'with'), hook=True,
            hook_settings={'log_file': log, 'syslog': '',
                           'state_dir': os.path.join(work, 'state')},
            cache_dir=libvirthost.CAPS_CACHE),
        'background': libvirthost.LibvirtHost(
            os.path.join(work, 'bg'), hook=True,
            hook_settings={'log_file': log + '.bg', 'syslog': '',
                           'background': 'true',
                           'state_dir': os.path.join(work, 'state-bg')},
            cache_dir=libvirthost.CAPS_CACHE),
    }
    # (libvirtd, domain) per column
    eager = 'tlbbench-prefault'
    cols = {m: (h, name) for m, h in hosts.items()}
    cols['prefault'] = (hosts['without hook'], eager)
    res = {m: [] for m in cols}
    started = []
    try:
        for h in hosts.values():
            h.start()
            started.append(h)
            h.define(xml, name)
            timed_start(h, name)            # warm-up, not counted
        hosts['without hook'].define(_common.tagged_xml(
            eager, args.memory_mib, prefault=True), eager)
        timed_start(hosts['without hook'], eager)
        order = list(cols)
        for i in range(args.runs):
            k = i % len(order)
            for mode in order[k:] + order[:k]:
                res[mode].append(timed_start(*cols[mode]))
        print('%d alternating runs done' % args.runs, flush=True)
        # the whole hook process per phase, with the installed hook and
        # its settings file, against the domain running under the
        # libvirtd without hook (its pid file, its real /proc entry)
        bare = hosts['without hook']
        bare.virsh('start', name)
        env = {'PATH': '/usr/bin:/bin',
               'TLBB_HOOK_RUN_DIR': bare.path('/run/libvirt/qemu'),
               'TLBB_HOOK_LOG_FILE': os.devnull}
        hook = hosts['with hook'].hook_path
        untagged = libvirthost.plain_domain('bench', 64).encode()
        tagged = xml.encode()
        n = args.process_runs
        proc = [
            ('untagged, any phase', untagged, 'prepare', 'begin'),
            ('tagged prepare', tagged, 'prepare', 'begin'),
            ('tagged start (no-op)', tagged, 'start', 'begin'),
            ('tagged started', tagged, 'started', 'begin'),
            ('tagged stopped', tagged, 'stopped', 'end'),
        ]
        proc_ms = [(label, hook_process_ms(hook, name, op, sub, data, n,
                                           env))
                   for label, data, op, sub in proc]
        bare.virsh('destroy', name)
    finally:
        for h in started:
            h.stop()
    with open(log) as f:
        recs = [json.loads(x) for x in f if x.strip()]
    with open(log + '.bg') as f:
        bg = [json.loads(x) for x in f if x.strip()]

    print()
    print('virsh start of a tagged %d MiB TCG domain, %d runs each, '
          'alternating' % (args.memory_mib, args.runs))
    for mode in cols:
        print('  %-13s %s' % (mode, _common.fmt(res[mode])))
    b = statistics.median(res['without hook'])
    for mode in ('with hook', 'background'):
        a = statistics.median(res[mode])
        pairs = [w - o for w, o in zip(res[mode], res['without hook'])]
        print('  %-10s adds %+.3f s to the median start, ratio %.3f (goal: '
              '< +%.3f s); paired differences %s'
              % (mode, a - b, a / b, GOAL_ADDED_S, _common.fmt(pairs)))
    c = statistics.median(res['prefault'])
    print('  pre-faulting %d MiB costs %+.3f s of the median start (no hook, '
          'immediate vs on-demand allocation)' % (args.memory_mib, c - b))
    print('hook phases as logged by the hook (in-process time, '
          'elapsed_ms):')
    for phase in ('prepare', 'started', 'stopped', 'release'):
        ms = [r['elapsed_ms'] for r in recs if r['phase'] == phase]
        if ms:
            print('  %-8s %s' % (phase, _common.fmt(ms, 'ms')))
    print('the same, background = true (after libvirt went on):')
    for phase in ('prepare', 'started'):
        ms = [r['elapsed_ms'] for r in bg if r['phase'] == phase]
        if ms:
            print('  %-8s %s (%d of %d in background)' % (
                phase, _common.fmt(ms, 'ms'), sum(
                    1 for r in bg if r['phase'] == phase and
                    r.get('background')), len(ms)))
    print('whole hook process as libvirtd runs it (interpreter start + '
          'imports + work; goal for a tagged phase: < %.0f ms):'
          % GOAL_PHASE_MS)
    for label, ms in proc_ms:
        print('  %-21s %s' % (label, _common.fmt(ms, 'ms')))
    print('load average at end: %s' % _common.loadavg())
    return 0


if __name__ == '__main__':
    sys.exit(main())
