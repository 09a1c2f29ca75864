# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance simulate``: the grouped-TLB simulator (tlbsim) front end.

One run (any machine preset or geometry file, workload, THP levels,
controller), ``--paper``: the paper's configurations side by side, or
``--compare-split-orders``: which huge pages the limiter splits.
Text table by default, ``--json`` for one JSON object, ``--csv`` for a
table file, ``--plot`` for a PNG.
"""

import csv
import json
import sys

from nova_tlbbalance.simulate import engine


def register(sub):
    p = sub.add_parser(
        'simulate', help='simulate grouped TLBs and the controller',
        description='Run tlbsim (tlbsim/): the kernel module\'s controller '
                    'on a simulated grouped TLB, natively or in a VM.')
    p.add_argument('--machine', default='gs464v',
                   help='preset (gs464v, la464, intel, generic) or a '
                        'geometry file (default %(default)s)')
    p.add_argument('--workload', default='mcf',
                   help='mcf, chase:size=..., seq:size=..., hotcold:..., '
                        'phases:..., trace:PATH (default %(default)s)')
    p.add_argument('--model', choices=engine.MODELS,
                   help='translation model (default: the machine\'s)')
    p.add_argument('--thp-guest', type=int, choices=(0, 1), default=1)
    p.add_argument('--thp-host', type=int, choices=(0, 1), default=1)
    p.add_argument('--hva-offset', type=int, default=0,
                   help='HVA - GPA in bytes; not a multiple of the huge '
                        'page forces small stage-2 mappings')
    p.add_argument('--controller', choices=engine.CONTROLLERS,
                   default='off')
    p.add_argument('--param', action='append', default=[],
                   metavar='NAME=VALUE',
                   help='controller tunable (tlbb_params.def); repeatable')
    p.add_argument('--accesses', type=float,
                   help='accesses to simulate (e.g. 3e8)')
    p.add_argument('--seconds', type=float,
                   help='simulated seconds to run instead')
    p.add_argument('--access-ns', type=float,
                   help='time of one access in ns, i.e. 1 / access rate '
                        '(default: the machine\'s)')
    p.add_argument('--refill-ns', type=float,
                   help='cost of one refill in ns (default: the machine\'s)')
    p.add_argument('--split-order', choices=engine.SPLIT_ORDERS,
                   help='which host huge pages the limiter splits '
                        '(default: the split_order tunable, 0 = high, the '
                        'address order of tlbb_thp.c)')
    p.add_argument('--paper', action='store_true',
                   help='the paper\'s configurations side by side')
    p.add_argument('--compare-split-orders', action='store_true',
                   help='address order, random and heat-aware splitting '
                        'side by side, with checks')
    p.add_argument('--trace', action='append', default=[], metavar='PATH',
                   help='--compare-split-orders: also this recorded trace '
                        '(repeatable)')
    p.add_argument('--compare-methods', action='store_true',
                   help='with --paper: the controller\'s methods (paper, '
                        'hill) side by side, on a 62 s run and on the '
                        'workloads where huge pages help, with the goals '
                        'as checks')
    p.add_argument('--short', action='store_true',
                   help='with --compare-methods or --compare-split-orders: '
                        'fewer and shorter runs (what tox -e sim asserts)')
    p.add_argument('--jobs', type=int, default=2,
                   help='runs in parallel (default %(default)s)')
    p.add_argument('--json', action='store_true',
                   help='print one JSON object')
    p.add_argument('--csv', metavar='FILE',
                   help='write the results table (--paper) or the per-tick '
                        'series (one run) as CSV')
    p.add_argument('--plot', metavar='FILE.png', help='write a PNG plot')
    p.set_defaults(func=run)


def _fail(msg):
    sys.stderr.write('tlbbalance simulate: %s\n' % msg)
    return 2


def _plots():
    try:
        from nova_tlbbalance.simulate import plots
    except ImportError as exc:
        raise engine.SimError(
            '--plot needs matplotlib, which the simulator\'s extra '
            'installs: pip install \'nova-tlbbalance[sim]\' (%s)' % exc)
    return plots


def run(args):
    try:
        params = engine.parse_params(args.param)
    except ValueError as exc:
        return _fail(exc)
    if args.accesses is not None and args.accesses <= 0:
        return _fail('--accesses must be positive')
    if args.jobs < 1:
        return _fail('--jobs must be at least 1')
    try:
        if args.plot:
            _plots()    # missing matplotlib said now, not after the runs
        if args.compare_split_orders:
            return _split_orders(args)
        if args.paper:
            return _paper(args, params)
        return _one(args, params)
    except engine.SimError as exc:
        return _fail(exc)


def _paper(args, params):
    from nova_tlbbalance.simulate import paper

    accesses = args.accesses
    if not accesses and not args.seconds:
        accesses = paper.DEFAULT_ACCESSES
    if args.compare_methods:
        return _methods(args, params, accesses)
    results = paper.run_all(machine=args.machine, workload=args.workload,
                            accesses=accesses, params=params,
                            split_order=args.split_order, jobs=args.jobs,
                            access_ns=args.access_ns,
                            refill_ns=args.refill_ns)
    summary = paper.summarize(results, args.machine, args.workload)
    if args.csv:
        with open(args.csv, 'w', newline='') as f:
            w = csv.DictWriter(f, fieldnames=paper.SUMMARY_KEYS)
            w.writeheader()
            w.writerows(summary['configs'])
    if args.plot:
        _plots().paper_plot(summary, results, args.plot)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(paper.table(summary))
    return 0


def _split_orders(args):
    from nova_tlbbalance.simulate import split_orders

    cases = list(split_orders.CASES) + [
        split_orders.trace_case(path, machine=args.machine)
        for path in args.trace]
    summary = split_orders.compare(cases, short=args.short, jobs=args.jobs,
                                   machine=args.machine)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(split_orders.table(summary))
    return 0 if all(summary['checks'].values()) else 1


def _methods(args, params, accesses):
    from nova_tlbbalance.simulate import methods
    from nova_tlbbalance.simulate import paper

    if args.seconds or args.workload != 'mcf' or args.machine != 'gs464v':
        raise engine.SimError('--compare-methods runs the paper\'s mcf '
                              'comparison on gs464v by accesses: drop '
                              '--seconds, --workload and --machine')
    out = methods.compare(scale=accesses / paper.DEFAULT_ACCESSES,
                          params=params, jobs=args.jobs, short=args.short)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(methods.table(out))
    return 0 if all(out['checks'].values()) else 1


def _one(args, params):
    cfg = engine.Config('run', thp_guest=bool(args.thp_guest),
                        thp_host=bool(args.thp_host),
                        controller=args.controller, model=args.model,
                        hva_offset=args.hva_offset)
    result = engine.run(cfg, machine=args.machine, workload=args.workload,
                        accesses=args.accesses, seconds=args.seconds,
                        params=params, split_order=args.split_order,
                        access_ns=args.access_ns, refill_ns=args.refill_ns)
    series = result.pop('series')
    if args.csv:
        with open(args.csv, 'w', newline='') as f:
            w = csv.writer(f)
            w.writerow(list(series))
            w.writerows(zip(*series.values()))
    if args.plot:
        _plots().run_plot(dict(result, series=series), args.plot)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print('machine %s (%s model), workload %s, %d accesses'
          % (result['machine'], result['model'], result['workload'],
             result['accesses']))
    print('refills: huge %d, small %d (%.3g/s); estimated time %.3f s'
          % (result['refills_huge'], result['refills_small'],
             result['refills_per_s'], result['est_time_s']))
    for g in result['groups']:
        print('  %-6s %5d entries %4d-way %-6s hits %d misses %d'
              % (g['name'], g['entries'], g['ways'], g['replace'],
                 g['hits'], g['misses']))
    print('host huge pages %d/%d, limit %d, splits %d, restores %d, '
          'controller %s (converged %s s)'
          % (result['huge_pages'], result['total_pages'],
             result['huge_limit'], result['splits'], result['restores'],
             result['ctrl_state'], result['converged_s']))
    return 0
