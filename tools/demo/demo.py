#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The main-job demo: a VM balanced for real in a compute node in a box.

Run by tools/demo/run-demo.sh (``make demo``). Boots the node
(tools/node/node.py), starts a VM from the driver plugin's XML for a flavor
tagged ``tlbbalance:mode=balance``, shows ``tlbbalance status`` before and
after the controller acts, follows N_hl, the VM's huge pages and KVM's
stage-2 ``pages_2m`` over time, and plots them (matplotlib).

There is no PMU here that splits TLB refills by page size, so the refill
counts come from the module's test-only injection backend; the demo says so
on screen and the module reports ``backend inject`` for the VM.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'node'))

import node as nodelib  # noqa: E402  (puts the checkout on sys.path)
from _repo import REPO  # noqa: E402
import scenario  # noqa: E402

from nova_tlbbalance.simulate import paper  # noqa: E402

VM = 'demo-vm'
VM_MIB = 256
FLOOR = 32
# The flavor's extra specs (tlbbalance:* keys): balance mode on THP; a
# 1 s sustain period and 8-page steps so it acts within the demo's time.
SPECS = {'mode': 'balance', 'backing': 'thp', 'sustain_ms': '1000',
         'step_pages': '8', 'floor_pages': str(FLOOR)}
# The paper's mcf case in a KVM guest with host and guest THP: huge-TLB
# refills ~2.18 M/s, small-TLB refills < 450/s.
HUGE_LOAD = paper.MCF_VM_REFILLS_PER_S
SMALL_LOAD = HUGE_LOAD[::-1]


def banner(text):
    print('\n== %s' % text, flush=True)


def show(text):
    print('   ' + '\n   '.join(text.rstrip().splitlines()), flush=True)


def interesting(st):
    keys = ('mode', 'backend', 'inject_enabled', 'state', 'huge_pages',
            'huge_limit', 'total_pages', 'refills_huge', 'refills_small',
            'imbalance', 'dominant', 'splits', 'restores')
    return '\n'.join('%-15s %s' % (k, st.get(k, '?')) for k in keys)


def plot(rows, phases, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    t0 = rows[0]['ts']
    t = [r['ts'] - t0 for r in rows]
    nan = float('nan')

    def col(key, scale=1.0):
        # A gap in the sampling (node busy) is drawn as a gap.
        out = []
        for i, r in enumerate(rows):
            gap = i and t[i] - t[i - 1] > 3
            out.append(nan if gap else float(r.get(key, nan)) * scale)
        return out

    total = float(rows[0].get('total_pages') or 1)
    fig, ax = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    ax[0].step(t, col('huge_limit'), where='post', label='N_hl (huge_limit)')
    ax[0].plot(t, col('huge_pages'), label='N_hc (huge pages mapped)')
    ax[0].plot(t, col('pages_2m'), '--', label="KVM stage-2 pages_2m")
    ax[0].set_ylabel('2 MiB pages')
    ax[0].legend(loc='upper right')
    ax[1].plot(t, col('huge_pages', 100.0 / total), color='tab:green')
    ax[1].set_ylabel('huge coverage %')
    ax[1].set_ylim(-5, 105)
    ax[2].plot(t, col('refills_huge'), label='huge-TLB refills / tick')
    ax[2].plot(t, col('refills_small'), label='small-TLB refills / tick')
    ax[2].set_yscale('symlog')
    ax[2].set_ylabel('refills (injected)')
    ax[2].set_xlabel('seconds')
    ax[2].legend(loc='upper right')
    for (start, end, label), color in zip(phases, ('tab:red', 'tab:blue')):
        for a in ax:
            a.axvspan(start - t0, end - t0, alpha=0.08, color=color)
        ax[0].text(start - t0, total * 1.02, label, fontsize=8)
    fig.suptitle('tlbbalance in a compute node in a box: %d MiB VM, '
                 'refills from the injection backend (no size-split PMU)'
                 % VM_MIB, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--kernel', default='6.1', choices=('6.1', '6.12'))
    p.add_argument('--out', default=os.path.join(REPO, 'out', 'demo'))
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    timings = []
    t_all = time.monotonic()

    banner('1. booting the compute node (Debian %s under QEMU TCG, real '
           'KVM inside)' % args.kernel)
    t = time.monotonic()
    node = nodelib.Node(kernel=args.kernel)
    node.start()
    timings.append(('node ready', time.monotonic() - t))
    show('kernel %s, kvm-amd: %s' % (node.ready['kernel'], node.check(
        'dmesg | grep -o "Nested Paging enabled" | head -1').strip()))
    show('tlbbalance.ko loaded (allow_inject=1), hook installed, '
         'libvirtd running')
    try:
        payload = nodelib.build_payload()
        banner('2. a VM for a flavor with tlbbalance:* extra specs, XML '
               'from the driver plugin')
        show('\n'.join('tlbbalance:%s=%s' % kv for kv in SPECS.items()))
        t = time.monotonic()
        xml = scenario.start_vm(node, VM, payload, specs=SPECS,
                                mem_mib=VM_MIB)
        show('\n'.join(ln for ln in xml.splitlines()
                       if 'tlbbalance:' in ln or 'source type' in ln))
        scenario.wait_payload(node, VM, timeout=300, passes=8)
        timings.append(('VM started, RAM touched', time.monotonic() - t))
        show('guest: ' + scenario.wait_payload(node, VM))
        node.check('echo 100 > /sys/kernel/mm/transparent_hugepage/'
                   'khugepaged/scan_sleep_millisecs')

        banner('3. tlbbalance status, before')
        show(node.check('tlbbalance status'))
        show(interesting(scenario.module_status(node, VM)))
        show('QMP query-stats: pages_2m=%(pages_2m)d pages_4k=%(pages_4k)d'
             % scenario.query_stats(node, VM))

        banner('4. feeding an imbalance')
        print('   !! This machine has NO PMU that counts TLB refills by page '
              'size.\n'
              '   !! The refill counts below are INJECTED through the '
              "module's test-only\n"
              '   !! backend (/sys/kernel/debug/tlbbalance/inject, '
              'allow_inject=1):\n'
              '   !! huge-TLB %d/s, small-TLB %d/s (the paper\'s mcf case). '
              'The controller,\n   !! the limiter and the stage-2 mappings '
              'are real.' % HUGE_LOAD, flush=True)
        t = time.monotonic()
        # Sampled in the background in the node, every 0.5 s, from here on.
        scenario.start_sampler(node, VM, every=0.5)
        time.sleep(3)
        phases = []
        start = scenario.inject(node, VM, *HUGE_LOAD)
        reached = scenario.wait_sample(node, VM, lambda r: (
            int(r.get('huge_limit', -1)) == FLOOR and
            r.get('pages_2m', 1 << 30) <= FLOOR), 180)
        show('N_hl reached the floor (%d): %s' % (FLOOR, bool(reached)))

        banner('5. tlbbalance status, after the controller acted')
        show(node.check('tlbbalance status'))
        show(interesting(scenario.module_status(node, VM)))
        show('QMP query-stats: pages_2m=%(pages_2m)d pages_4k=%(pages_4k)d'
             % scenario.query_stats(node, VM))

        banner('6. the load moves to the small TLB: the limit comes back')
        end = start
        start = scenario.inject(node, VM, *SMALL_LOAD)
        phases.append((end, start, 'huge TLB thrashed'))
        back = scenario.wait_sample(node, VM, lambda r: (
            int(r.get('huge_limit', 0)) == int(r.get('total_pages', -1)) and
            r.get('pages_2m', 0) >= int(r['total_pages']) * 9 // 10), 180)
        phases.append((start, scenario.inject_off(node, VM),
                       'small TLB loaded'))
        show('N_hl back to all of the VM, pages_2m >= 90 %%: %s' % bool(back))
        time.sleep(3)
        rows = scenario.stop_sampler(node, VM)
        show(interesting(scenario.module_status(node, VM)))
        show('QMP query-stats: pages_2m=%(pages_2m)d pages_4k=%(pages_4k)d'
             % scenario.query_stats(node, VM))
        show('guest memory errors seen by the payload: %d'
             % scenario.payload_errors(node, VM))
        timings.append(('controller phases', time.monotonic() - t))

        banner('7. N_hl, huge coverage, stage-2 pages_2m over time')
        print('   %6s %-10s %6s %6s %8s %10s %10s' % (
            't(s)', 'state', 'N_hl', 'N_hc', 'pages_2m', 'refills_h',
            'refills_s'))
        t0 = rows[0]['ts']
        step = max(1, len(rows) // 40)
        for r in rows[::step]:
            print('   %6.1f %-10s %6s %6s %8s %10s %10s' % (
                r['ts'] - t0, r.get('state'), r.get('huge_limit'),
                r.get('huge_pages'), r.get('pages_2m'),
                r.get('refills_huge'), r.get('refills_small')))
        with open(os.path.join(args.out, 'demo.json'), 'w') as f:
            json.dump({'rows': rows, 'phases': phases, 'specs': SPECS}, f)
        png = os.path.join(args.out, 'demo.png')
        plot(rows, phases, png)
        print('   plot: %s\n   data: %s' % (
            png, os.path.join(args.out, 'demo.json')))
        node.check('virsh -q destroy %s' % VM, timeout=120)
    finally:
        status = node.poweroff()
    timings.append(('node power-off', node.timings.get('poweroff', 0)))
    timings.append(('demo.py in all', time.monotonic() - t_all))
    banner('timings')
    for what, secs in timings:
        print('   %-28s %6.1f s' % (what, secs))
    return status


if __name__ == '__main__':
    sys.exit(main())
