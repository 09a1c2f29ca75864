# SPDX-License-Identifier: Apache-2.0
"""Which huge pages to split: address order, random and heat side by side.

``tlbbalance simulate --compare-split-orders [--json] [--trace PATH]``:
the module's ``split_order`` tunable (its values as ``tlbb_choices.def``
names them, which tlbsim's ``--split-order`` takes too) on the same
workloads in the simulator, each case run once per order with everything
else equal, on GS464V with both THP levels.

Two ways of limiting: the controller (``balance``, its defaults), as in
production; and a held limit (``--huge-limit N --huge-limit-at 2``: every
page faults in huge, the heat is sampled for 2 simulated seconds, then the
limit splits the excess in the order under test), which isolates the
choice of pages from the controller's choice of how many.

``checks``: heat is never worse than address order (estimated time at
most 0.1 % longer, the same run otherwise), and at least 1 % better where
the hot set is not in address order (``hot_in_address_order`` false:
the limiter's address order splits the highest addresses first, so a hot
set low in the range is already kept by it).
"""

import concurrent.futures
import dataclasses

from nova_tlbbalance import module_defs
from nova_tlbbalance.simulate import engine

ORDERS = module_defs.choice_names('split_order')
NEVER_WORSE = 1.001
BEATS = 0.99
LIMIT_AT_S = 2.0


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    workload: str
    hot_in_address_order: bool
    accesses: float
    huge_limit: int = None       # None: the controller decides
    short_accesses: float = None


# GS464V: 32 MiB huge pages, a 64-entry VTLB for them.
CASES = (
    # mcf-like: 1000 hot 16 KiB blocks over 1.6 GB, on every huge page:
    # all pages are equally hot, no order can do better
    Case('mcf', 'mcf', True, 3e8, short_accesses=6e7),
    Case('mcf-held', 'mcf', True, 1.5e8, huge_limit=14,
         short_accesses=5e7),
    # 1 GiB hot (32 huge pages) in 8 GiB, 99 % of the accesses; held at
    # 64 huge pages: the 32 hot ones fit the VTLB if they are kept
    Case('hotcold-low-held', 'hotcold:size=8G,hot=1G,hot_frac=0.99',
         True, 1.5e8, huge_limit=64, short_accesses=5e7),
    Case('hotcold-high-held',
         'hotcold:size=8G,hot=1G,hot_frac=0.99,hot_at=7G', False, 1.5e8,
         huge_limit=64, short_accesses=5e7),
    Case('hotcold-mid-held',
         'hotcold:size=8G,hot=1G,hot_frac=0.99,hot_at=3G', False, 1.5e8,
         huge_limit=64, short_accesses=5e7),
    # the same hot set scattered: 32 hot huge pages spread over 8 GiB
    Case('scattered-held',
         'chase:size=8G,hot_pages=32,hot_page=32M,hot_frac=0.99', False,
         1.5e8, huge_limit=64, short_accesses=5e7),
    # the controller on a hot set at the top
    Case('hotcold-high', 'hotcold:size=4G,hot=64M,hot_frac=0.95,'
         'hot_at=4032M', False, 1.5e8, short_accesses=None),
)


def trace_case(path, accesses=1e8, short_accesses=3e7, machine='gs464v',
               tlbsim=None):
    """A real-program trace (looping), held at half its huge pages.

    Whether its hot set is in address order is not known beforehand, so
    only the never-worse check applies to it.
    """
    res = engine.run(engine.Config('trace-size'), machine=machine,
                     workload='trace:%s' % path, accesses=1, series=False,
                     tlbsim=tlbsim)
    return Case('trace:%s' % str(path).rsplit('/', 1)[-1],
                'trace:%s' % path, True, accesses,
                huge_limit=max(1, res['total_pages'] // 2),
                short_accesses=short_accesses)


def _run(case, order, short, tlbsim, machine):
    if case.huge_limit is None:
        cfg = engine.Config('%s/%s' % (case.name, order),
                            controller='balance')
        limit = {}
    else:
        cfg = engine.Config('%s/%s' % (case.name, order))
        limit = dict(huge_limit=case.huge_limit, huge_limit_at=LIMIT_AT_S)
    accesses = case.short_accesses if short else case.accesses
    return engine.run(cfg, machine=machine, workload=case.workload,
                      accesses=accesses,
                      split_order=order, series=False,
                      tlbsim=tlbsim, **limit)


KEEP = ('est_time_s', 'refills_huge', 'refills_small', 'huge_pages',
        'total_pages', 'huge_limit', 'splits', 'restores', 'accesses')


def compare(cases=CASES, short=False, jobs=2, machine='gs464v'):
    """Run every case in every order; the summary with its ``checks``."""
    tlbsim = engine.binary()
    if short:
        cases = [c for c in cases if c.short_accesses]
    jobs_list = [(c, o) for c in cases for o in ORDERS]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        results = list(ex.map(lambda co: _run(co[0], co[1], short, tlbsim,
                                              machine), jobs_list))
    out = []
    for i, case in enumerate(cases):
        orders = {o: {k: results[3 * i + j][k] for k in KEEP}
                  for j, o in enumerate(ORDERS)}
        t = {o: orders[o]['est_time_s'] for o in ORDERS}
        out.append({
            'name': case.name, 'workload': case.workload,
            'limit': ('held at %d after %g s' % (case.huge_limit, LIMIT_AT_S)
                      if case.huge_limit is not None else 'controller'),
            'hot_in_address_order': case.hot_in_address_order,
            'orders': orders,
            'heat_vs_address': round(t['heat'] / t['address'], 4),
            'random_vs_address': round(t['random'] / t['address'], 4),
        })
    checks = {
        'heat_never_worse': all(c['heat_vs_address'] <= NEVER_WORSE
                                for c in out),
        'heat_beats_address_where_hot_set_out_of_order': all(
            c['heat_vs_address'] <= BEATS for c in out
            if not c['hot_in_address_order']),
    }
    return {'machine': machine, 'short': short, 'orders': list(ORDERS),
            'never_worse_tolerance': NEVER_WORSE, 'beats_by': BEATS,
            'cases': out, 'checks': checks}


def table(summary):
    """The comparison as text: estimated seconds per order."""
    lines = ['%-22s %-22s %10s %10s %10s %8s %5s' % (
        'case', 'limit', 'address', 'random', 'heat', 'heat/adr', 'in-ord')]
    for c in summary['cases']:
        o = c['orders']
        lines.append('%-22s %-22s %10.3f %10.3f %10.3f %8.4f %5s' % (
            c['name'][:22], c['limit'], o['address']['est_time_s'],
            o['random']['est_time_s'], o['heat']['est_time_s'],
            c['heat_vs_address'], 'yes' if c['hot_in_address_order']
            else 'no'))
    lines.append('checks: %s' % ', '.join(
        '%s=%s' % kv for kv in summary['checks'].items()))
    return '\n'.join(lines)
