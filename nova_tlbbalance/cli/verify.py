# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance verify``: exit 1 when a tagged VM is not what it asked for."""

import json
import sys

from nova_tlbbalance.cli import _common
from nova_tlbbalance.probes import verdict


UNTAGGED = ('untagged (no tlbbalance policy in its <metadata>): nothing to '
            'verify')


def register(sub):
    p = sub.add_parser('verify', help='check every tagged running VM '
                       'against its policy; exit 1 with reasons if any fails')
    _common.add_source_options(p)
    p.add_argument('--min-coverage', type=float,
                   default=verdict.DEFAULT_MIN_COVERAGE * 100,
                   help='huge-page coverage of guest RAM below which a VM '
                   'is under-covered, percent (default %(default)s)')
    p.add_argument('--no-module', action='store_true',
                   help='do not require registration with the kernel module '
                   '(hosts that cannot load it)')
    p.add_argument('--json', action='store_true')
    p.add_argument('domains', nargs='*', help='only these domains')
    p.set_defaults(func=run)


def run(args):
    if not 0 <= args.min_coverage <= 100:
        sys.stderr.write('tlbbalance verify: --min-coverage %r: allowed '
                         '0..100\n' % args.min_coverage)
        return 2
    host, reps = _common.collect(args)
    if args.domains:
        missing = set(args.domains) - {r.name for r in reps}
        if missing:
            sys.stderr.write('tlbbalance verify: not running: %s\n'
                             % ', '.join(sorted(missing)))
            return 2
        reps = [r for r in reps if r.name in args.domains]
    result = {}
    untagged = []       # named on the command line, nothing to verify
    for rep in reps:
        if not rep.managed:
            if args.domains:
                untagged.append(rep.name)
            continue
        result[rep.name] = verdict.reasons(
            rep, args.min_coverage / 100, not args.no_module, host)
    if args.json:
        out = dict(result, **{n: None for n in untagged})
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        for name, why in sorted(result.items()):
            print('%s: %s' % (name, 'OK' if not why else 'FAIL'))
            for w in why:
                print('  - %s' % w)
        for name in sorted(untagged):
            print('%s: %s' % (name, UNTAGGED))
        if not result and not untagged:
            print('no tagged VM running')
    return 1 if any(result.values()) else 0
