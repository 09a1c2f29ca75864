"""``tlbbalance verify``: exit 1 when a tagged VM is not what it asked for."""

import json
import sys

from nova_tlbbalance.cli import _common
from nova_tlbbalance.probes import verdict


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
    _, reps = _common.collect(args)
    if args.domains:
        missing = set(args.domains) - {r['name'] for r in reps}
        if missing:
            sys.stderr.write('tlbbalance verify: not running: %s\n'
                             % ', '.join(sorted(missing)))
            return 2
        reps = [r for r in reps if r['name'] in args.domains]
    result = {}
    for rep in reps:
        if not rep.get('managed'):
            continue
        result[rep['name']] = verdict.reasons(
            rep, args.min_coverage / 100, not args.no_module)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        for name, why in sorted(result.items()):
            print('%s: %s' % (name, 'OK' if not why else 'FAIL'))
            for w in why:
                print('  - %s' % w)
        if not result:
            print('no tagged VM running')
    return 1 if any(result.values()) else 0
