# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance collapse``: huge pages restored now, with MADV_COLLAPSE
(nova_tlbbalance.collapse), never above the module's limit."""

import json
import sys

from nova_tlbbalance import collapse
from nova_tlbbalance import modclient

PMD_SIZE = '/sys/kernel/mm/transparent_hugepage/hpage_pmd_size'


def register(sub):
    p = sub.add_parser(
        'collapse', help='collapse a VM\'s guest RAM into huge pages now '
        '(process_madvise MADV_COLLAPSE, Linux >= 6.1)',
        description='Collapse the guest RAM ranges of a VM the tlbbalance '
        'module holds (--vm), or of any process (--pid and --range), into '
        'huge pages now instead of at khugepaged\'s pace. While the module '
        'limits the VM (mode monitor or balance) no more huge pages are '
        'formed than its limit N_hl; --cpu-share paces the work. A slot '
        'the guest never touched (no resident page) is counted untouched, '
        'not refused. Exit status: 0 done (untouched slots included), 1 '
        'some slots with resident pages were refused, 2 it could not run '
        '(named on stderr).')
    p.add_argument('--vm', help='a VM directory of the module (its pid, '
                   'ranges and huge_limit)')
    p.add_argument('--pid', type=int, help='a process (with --range)')
    p.add_argument('--range', action='append', default=[],
                   metavar='HVA:LENGTH',
                   help='a range of --pid (0x hex or decimal); repeatable')
    p.add_argument('--cpu-share', type=float, default=0.25,
                   help='share of one CPU the collapse may use (default '
                   '%(default)s)')
    p.add_argument('--configfs', default=None,
                   help='tlbbalance configfs root (default $%s or %s)'
                   % (modclient.ENV_ROOT, modclient.DEFAULT_ROOT))
    p.add_argument('--json', action='store_true', help='machine-readable')
    p.set_defaults(func=run)


def _fail(msg):
    sys.stderr.write('tlbbalance collapse: %s\n' % msg)
    return 2


def _parse_range(text):
    hva, sep, length = text.partition(':')
    if not sep:
        raise ValueError('--range %r: not HVA:LENGTH' % text)
    try:
        return int(hva, 0), int(length, 0)
    except ValueError:
        raise ValueError('--range %r: not numbers' % text) from None


def _target(args):
    """(pid, [(hva, length)], limit or None)."""
    if args.vm:
        if args.pid is not None or args.range:
            raise ValueError('--vm takes no --pid or --range')
        client = modclient.Client(args.configfs)
        status = client.status(args.vm)
        ranges = client.ranges(args.vm)
        if status is None or ranges is None:
            raise ValueError('no VM %r in %s' % (args.vm, client.root))
        pid = status.pid or 0
        if not pid:
            raise ValueError('VM %r has no process registered' % args.vm)
        limit = None
        if status.mode in ('monitor', 'balance'):
            if 'huge_limit' not in status:
                raise ValueError('VM %r: no huge_limit in its status (%s)'
                                 % (args.vm, '; '.join(status.problems)
                                    or 'not printed'))
            limit = status['huge_limit']
        return pid, [(h, n) for h, n, _ in ranges], limit
    if args.pid is None or not args.range:
        raise ValueError('give --vm, or --pid and at least one --range')
    return args.pid, [_parse_range(r) for r in args.range], None


def run(args):
    try:
        pid, ranges, limit = _target(args)
        with open(PMD_SIZE) as f:
            slot = int(f.read())
        res = collapse.collapse(
            pid, ranges, slot, limit=limit,
            count=lambda: collapse.smaps_huge(pid, ranges, slot),
            cpu_share=args.cpu_share)
        huge = collapse.smaps_huge(pid, ranges, slot)
    except (ValueError, OSError, collapse.CollapseError,
            modclient.ModuleError) as exc:
        return _fail(exc)
    out = res.as_dict()
    out.update(pid=pid, limit=limit, huge_pages=huge,
               seconds_per_gib=round(res.total_s * (1 << 30) /
                                     (res.slots * slot), 3)
               if res.slots else None)
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        print('pid %d: %d slot(s) asked, %d collapsed, untouched: %d '
              'slots, refused %s; %d huge page(s) now%s; %.3f s (%.3f s '
              'busy)'
              % (pid, res.slots, res.collapsed, res.untouched,
                 ', '.join('%s %d' % kv for kv in sorted(res.refused.items()))
                 or 'none', huge,
                 ' (limit %d%s)' % (limit, ', reached' if
                                    res.stopped_at_limit else '')
                 if limit is not None else '', res.total_s, res.busy_s))
    return 1 if res.refused else 0
