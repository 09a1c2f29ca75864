#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Stress guest memory under nested KVM in the node, and watch for damage.

Two lazily faulted payload guests (tools/payload: every pass checks each
page's signature) run in a node booted under QEMU TCG, while the node's
kernel moves their memory under them:

  --kernel-only   no tlbbalance: every round splits every THP
                  (debugfs split_huge_pages), compacts memory
                  (/proc/sys/vm/compact_memory) and lets khugepaged
                  collapse with no pause (scan_sleep_millisecs 0);
  (default)       tlbbalance loaded, the guests registered in balance
                  mode: every cycle an injected imbalance makes the
                  module split each guest down to its floor, then mode
                  off and `tlbbalance collapse` make them huge again.

After each round or cycle: the node alive, no payload error (a lost or
misdirected write shows as a signature mismatch, or an exception line),
no oops, warning, KASAN report or panic in the node's kernel log. The
first problem ends the run with its evidence; exit 0 only when every
round was clean. docs/node.md ("Open: a kernel panic in the node")
gives the figures and why this exists.

    tools/node/stress.py [--kernel 6.1] [--kernel-only] [--minutes 25]
                         [--cycles 12]
"""

import argparse
import importlib.util
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import node as nodelib  # noqa: E402
import scenario  # noqa: E402
from _repo import REPO  # noqa: E402  (node put tools/ on sys.path)
from tlbbwait import WaitTimeout, wait_until  # noqa: E402


def _check_log():
    """kernel-module/tests/check-log.py, the in-kernel suite's judge of a
    kernel log: its BAD lines are this tool's too."""
    path = os.path.join(REPO, 'kernel-module', 'tests', 'check-log.py')
    spec = importlib.util.spec_from_file_location('check_log', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BAD = _check_log().BAD
VMS = ('st1', 'st2')
FLOOR = 16
SPECS = {'mode': 'balance', 'backing': 'thp', 'sustain_ms': '1000',
         'step_pages': '8', 'floor_pages': str(FLOOR)}
THP = '/sys/kernel/mm/transparent_hugepage'


class Damage(Exception):
    pass


def check(n, when):
    """Raise Damage naming what went wrong at ``when``; payload errors."""
    if not n.alive():
        raise Damage('the node died at %s:\n%s' % (when, n.console_tail(80)))
    errs = {vm: scenario.payload_errors(n, vm) for vm in VMS}
    logs = {vm: n.run('tail -c 300 %s' % scenario.serial_log(vm)).stdout
            for vm in VMS}
    bad = [ln for ln in n.run('dmesg').stdout.splitlines()
           if BAD.search(ln)]
    if any(errs.values()) or bad or any(
            'tlbb-payload: error' in log for log in logs.values()):
        raise Damage('at %s: payload errors %s\n%s\n%s' % (
            when, errs, '\n'.join(bad[-30:]), logs))
    return errs


def kernel_only(n, minutes, t0):
    n.check('echo 0 > %s/khugepaged/scan_sleep_millisecs; '
            'echo 4096 > %s/khugepaged/pages_to_scan' % (THP, THP))
    end = time.monotonic() + minutes * 60
    rounds = 0
    while time.monotonic() < end:
        rounds += 1
        vmstat = n.run('echo 1 > /sys/kernel/debug/split_huge_pages; '
                       'echo 1 > /proc/sys/vm/compact_memory; '
                       'grep -E "^(thp_split_pmd|thp_collapse_alloc|'
                       'pgmigrate_success) " /proc/vmstat | tr "\\n" " "',
                       timeout=120).stdout.strip()
        errs = check(n, 'round %d' % rounds)
        print('%.0f s round %d: %s payload errors %s' % (
            time.monotonic() - t0, rounds, vmstat, errs), flush=True)
        time.sleep(2)
    return rounds


def with_module(n, cycles, t0):
    cfs = scenario.CONFIGFS
    for c in range(1, cycles + 1):
        for vm in VMS:
            scenario.inject(n, vm, 2180000, 400)
        t1 = time.monotonic()
        sts = []

        def at_floor():
            sts[:] = [scenario.module_status(n, vm) for vm in VMS]
            return all(int(s['huge_limit']) <= FLOOR for s in sts)
        # 7-74 s at host load 2-30 for 128 MiB guests
        try:
            wait_until('cycle %d: both guests at the floor %d' % (c, FLOOR),
                       at_floor, 240, 2)
        except WaitTimeout as e:
            raise Damage('%s: %s' % (e, sts))
        split_s = time.monotonic() - t1
        for vm in VMS:
            scenario.inject_off(n, vm)
            n.check('echo off > %s/vms/%s/mode' % (cfs, vm))
        check(n, 'cycle %d after the splits' % c)
        huge = []
        for vm in VMS:
            r = n.run('tlbbalance collapse --vm %s --json --cpu-share 1'
                      % vm, timeout=300)
            try:
                out = json.loads(r.stdout)
                huge.append('%d/%d' % (out['huge_pages'], out['slots']))
            except ValueError:
                raise Damage('cycle %d: collapse of %s: rc %d %s %s' % (
                    c, vm, r.rc, r.stdout[-300:], r.stderr[-300:]))
        errs = check(n, 'cycle %d after the collapse' % c)
        for vm in VMS:
            n.check('echo balance > %s/vms/%s/mode' % (cfs, vm))
        print('%.0f s cycle %d: at the floor in %.0f s, splits %s, huge '
              'again %s, payload errors %s' % (
                  time.monotonic() - t0, c, split_s,
                  [s['splits'] for s in sts], huge, errs), flush=True)
    return cycles


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--kernel', default='6.1')
    ap.add_argument('--kernel-only', action='store_true',
                    help='no tlbbalance: the kernel moves the memory')
    ap.add_argument('--minutes', type=float, default=25,
                    help='--kernel-only: how long')
    ap.add_argument('--cycles', type=int, default=12,
                    help='with the module: split/collapse cycles')
    args = ap.parse_args(argv)
    module = not args.kernel_only
    payload = nodelib.build_payload()
    t0 = time.monotonic()
    n = nodelib.Node(kernel=args.kernel, module=module, boot_timeout=600)
    n.start()
    try:
        for vm in VMS:
            scenario.start_vm(n, vm, payload, mem_mib=128,
                              specs=SPECS if module else None)
        for vm in VMS:
            scenario.wait_payload(n, vm, timeout=300, passes=2)
        print('%.0f s: %s running on %s, tlbbalance %s' % (
            time.monotonic() - t0, ', '.join(VMS), n.kernel.abi,
            'loaded' if module else 'not loaded'), flush=True)
        if module:
            done = '%d cycles' % with_module(n, args.cycles, t0)
        else:
            done = '%d rounds' % kernel_only(n, args.minutes, t0)
    except Damage as e:
        print('DAMAGE %s' % e, flush=True)
        return 1
    finally:
        if n.alive():
            n.poweroff()
    print('clean: %s, no payload error, no kernel report' % done)
    return 0


if __name__ == '__main__':
    sys.exit(main())
