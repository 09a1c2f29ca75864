# SPDX-License-Identifier: Apache-2.0
"""A family of workloads drawn from seeds, and every method on each.

``python3 -m nova_tlbbalance.simulate.family [--seeds 0-11]
[--traces sqlite,cc1,sysbench-memory] [--json]``

Each seed gives one workload (``workload(seed)``): the kind cycles with
the seed (so any run of consecutive seeds covers every kind) and the rest
is drawn from ``random.Random(seed)``, so anyone can add workloads by
adding seeds, and a seed always gives the same workload:

- ``drift``: a contiguous hot set that moves up through memory, wrapping
  (tlbsim ``hotcold:...,drift=D,drift_every=1000000``), at a speed of 1/4,
  1 or 4 footprints per 1e8 accesses (slow to fast, in turn with
  ``seed // 4``);
- ``place``: a contiguous hot set held at the bottom, the middle or the
  top of memory (in turn with ``seed // 4``; stationary);
- ``scatter``: a mixture of hot blocks scattered over the footprint and
  cold accesses anywhere (the mcf-like chase with other block sizes,
  counts and shares; stationary);
- ``phases``: bursty phases, a chase and a sequential stream alternating
  every 1e6 to 5e7 accesses.

Beside the seeds, ``recorded`` real programs: the traces committed in
tlbsim/traces/recorded/ (a database, a compiler, sysbench memory; their
README states what each holds and its limits), replayed looping
(``trace:PATH``) for as many accesses as the seeds' runs.

Footprints (VM sizes) are drawn from 128 MiB to 64 GiB. Every workload
runs in a VM with both THP levels on the gs464v preset (its fitted cost
model) with the controller off, with each method of ``methods.METHODS``
(default tunables), and, on the stationary ones, with limits held from
the start (a grid of quarters of the VM plus each method's final limit):
the best of those and the controller off is the best fixed limit.

The goals (docs/simulator.md, "A workload family") are the ``checks``:
the safe method never more than 1 % slower than the controller off,
within 2 % of the best fixed limit on the stationary workloads, its
reversals bounded (``reversal_bound``).
"""

import argparse
import concurrent.futures
import json
import math
import random
import subprocess
import sys

from nova_tlbbalance.simulate import engine
from nova_tlbbalance.simulate import methods

KINDS = ('drift', 'place', 'scatter', 'phases')
RECORDED_KIND = 'recorded'
# tlbsim/traces/recorded/NAME.trc.gz (README.md there)
RECORDED = ('sqlite', 'cc1', 'sysbench-memory')
STATIONARY = ('place', 'scatter')
MIB = 1 << 20
SIZES_MIB = (128, 512, 1024, 4096, 16384, 65536)
HUGE_MIB = 32                   # gs464v's huge page
# every kind, the three drift speeds and the three places; 512 MiB-16 GiB
CI_SEEDS = (0, 1, 4, 5, 6, 8, 9, 11)
CI_ACCESSES = 1e8               # ~20 simulated seconds (fitted model)
LONG_ACCESSES = 6e8             # --long: ~2 simulated minutes
CI_TRACE_ACCESSES = CI_ACCESSES  # the recorded programs in CI
NEW_METHOD = 'safe'
GOAL_VS_OFF = 0.01              # never more than 1 % slower than off
GOAL_VS_BEST_FIXED = 0.02       # stationary: within 2 % of the best
SPLIT_AT_S = 1.0                # best split: the limiter starts then
PROBE_S = 30.0                  # tlbb_params.def probe_ms default
DRIFT_EVERY = 1000000


def _mib(x):
    return '%dM' % x


def recorded_path(name):
    """Path of the committed trace ``name`` (tlbsim/traces/recorded);
    ValueError names an unknown or missing one."""
    path = engine.tlbsim_dir() / 'traces' / 'recorded' / (
        '%s.trc.gz' % name)
    if not path.is_file():
        raise ValueError('recorded trace %r: no %s (known: %s)'
                         % (name, path, ', '.join(RECORDED)))
    return path


def recorded(name, tlbsim=None):
    """The workload of the committed recording ``name``: as ``workload``
    returns, keyed by the name (``seed`` None); ValueError names an
    unknown or missing one."""
    path = recorded_path(name)
    info = subprocess.run(
        [tlbsim or engine.binary(), 'trace-info', str(path)],
        capture_output=True, text=True, check=True).stdout
    n = json.loads(info.strip().splitlines()[-1])['accesses']
    return {'seed': None, 'key': name, 'kind': RECORDED_KIND,
            'spec': 'trace:%s' % path, 'size_mib': None,
            'what': name, 'stationary': False, 'trace_accesses': n}


def workload(seed):
    """The workload of ``seed``: dict with name, kind, spec, stationary."""
    rng = random.Random(seed)
    kind = KINDS[seed % len(KINDS)]
    size = rng.choice(SIZES_MIB)
    pages = max(1, size // HUGE_MIB)
    if kind in ('drift', 'place'):
        hot = max(HUGE_MIB, size // rng.choice((16, 8, 4)))
        frac = rng.choice((0.9, 0.95, 0.99))
        spec = 'hotcold:size=%s,hot=%s,hot_frac=%s' % (
            _mib(size), _mib(hot), frac)
        if kind == 'drift':
            speed = (0.25, 1.0, 4.0)[seed // len(KINDS) % 3]
            # footprints per 1e8 accesses -> bytes per DRIFT_EVERY
            step = int(size * MIB * speed * DRIFT_EVERY / 1e8)
            step = max(16 << 10, step // (16 << 10) * (16 << 10))
            spec += ',drift=%d,drift_every=%d' % (step, DRIFT_EVERY)
            where = 'speed %g' % speed
        else:
            where = ('bottom', 'middle', 'top')[seed // len(KINDS) % 3]
            at = {'bottom': 0, 'middle': (size - hot) // 2,
                  'top': size - hot}[where]
            spec += ',hot_at=%s' % _mib(at)
    elif kind == 'scatter':
        block_kib = rng.choice((16, 2048, 32768))
        nblocks = size * 1024 // block_kib
        count = max(1, int(nblocks * rng.choice((0.02, 0.1, 0.3))))
        if block_kib == 32768:
            count = max(1, min(count, pages // 2))
        count = min(count, 4000)
        frac = rng.choice((0.8, 0.9, 0.99))
        spec = 'chase:size=%s,hot_pages=%d,hot_page=%dK,hot_frac=%s' % (
            _mib(size), count, block_kib, frac)
        where = '%d blocks of %d KiB' % (count, block_kib)
    else:
        period = rng.choice((1000000, 10000000, 50000000))
        spec = 'phases:size=%s,period=%d' % (_mib(size), period)
        where = 'period %d' % period
    out = {'seed': seed, 'key': seed, 'kind': kind, 'spec': spec,
           'size_mib': size,
           'what': where, 'stationary': kind in STATIONARY}
    if kind == 'phases':
        out['period'] = period
    return out


def parse_seeds(text):
    """'0-11' or '0,3,7' or '5' -> list of ints; ValueError names it."""
    out = []
    for part in text.split(','):
        a, sep, b = part.partition('-')
        try:
            out += list(range(int(a), int(b) + 1)) if sep else [int(a)]
        except ValueError:
            raise ValueError('--seeds %r: use N, N-M or N,M,...' % text)
    return out


def _run(spec, accesses, cfg, tlbsim, **kw):
    return engine.run(cfg, workload=spec, accesses=accesses, tlbsim=tlbsim,
                      series=False, **kw)


def _row(r, off):
    return {'vs_off': round(r['est_time_s'] / off, 4),
            'converged_s': r['converged_s'],
            'reversals': r['reversals'], 'splits': r['splits'],
            'restores': r['restores'], 'final_limit': r['huge_limit']}


def reversal_bound(run_s, kind, total_pages, phase_changes=0):
    """Reversals the safe method may make in a run of ``run_s`` seconds.

    A search makes at most two tries per halving of its step, so at most
    ``2 * log2(total) + 2`` reversals (docs/controller.md, "Bounds"). On a
    stationary load searches start at the load's start and at probes whose
    interval doubles while nothing is found: ``1 + log2(1 + run_s /
    probe)``. A phase change may start one more each; a drifting hot set
    may start one per second at most (a weak bound: the held cost moves
    whenever the hot set does).
    """
    per_search = 2 * math.ceil(math.log2(total_pages + 1)) + 2
    searches = 1 + math.ceil(math.log2(1 + run_s / PROBE_S))
    searches += phase_changes
    if kind == 'drift':
        searches += math.ceil(run_s)
    return per_search * searches


def evaluate(seeds=CI_SEEDS, accesses=CI_ACCESSES, jobs=2, tlbsim=None,
             traces=RECORDED, trace_accesses=None):
    """Every method on every seed's workload and on each recorded trace
    of ``traces`` (``trace_accesses`` each, default ``accesses``); dict
    with rows and checks."""
    tlbsim = tlbsim or engine.binary()
    wls = [workload(s) for s in seeds]
    wls += [dict(recorded(t, tlbsim), accesses=int(
        trace_accesses or accesses)) for t in traces]
    off_cfg = engine.Config('off', controller='off')
    runs = []
    for w in wls:
        n = w.get('accesses', accesses)
        runs.append(((w['key'], 'off'), w['spec'], off_cfg, n))
        runs += [((w['key'], m), w['spec'], methods.config(m, v), n)
                 for m, v in methods.METHODS]

    def one(item):
        key, spec, cfg, n = item[:4]
        return key, _run(spec, n, cfg, tlbsim,
                         **(item[4] if len(item) > 4 else {}))

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        res = dict(ex.map(one, runs))
    fixed_runs = []
    for w in wls:
        if not w['stationary']:
            continue
        total = res[(w['key'], 'off')]['total_pages']
        lims = {total * k // 4 for k in range(4)}
        lims |= {res[(w['key'], m)]['huge_limit']
                 for m, _ in methods.METHODS}
        lims.discard(total)
        fixed_runs += [((w['key'], 'fixed', lim), w['spec'],
                        engine.Config('fixed-%d' % lim, huge_limit=lim),
                        accesses)
                       for lim in sorted(lims)]
        # the same limits reached as a controller reaches them: the
        # pages fault in huge, then the limiter splits down to the limit
        # in its (default) split order
        fixed_runs += [((w['key'], 'split', lim), w['spec'],
                        engine.Config('split-%d' % lim, huge_limit=lim),
                        accesses, {'huge_limit_at': SPLIT_AT_S})
                       for lim in sorted(lims)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        res.update(dict(ex.map(one, fixed_runs)))
    rows = []
    for w in wls:
        off_r = res[(w['key'], 'off')]
        off = off_r['est_time_s']
        n = w.get('accesses', accesses)
        row = dict(w, accesses=int(n), est_time_s_off=off,
                   total_pages=off_r['total_pages'],
                   run_s=round(off, 1),
                   refill_share_off=off_r['refill_share'])
        if w['kind'] == RECORDED_KIND:
            # the VM: the trace's regions, packed (docs/simulator.md)
            row['size_mib'] = off_r['total_pages'] * HUGE_MIB
        for m, _ in methods.METHODS:
            row[m] = _row(res[(w['key'], m)], off)
        if w['stationary']:
            for kind in ('fixed', 'split'):
                row['best_' + kind] = _best_limit(
                    res, w['key'], kind, off_r['total_pages'], off)
        if w['kind'] == 'phases':
            changes = int(n // w['period'])
        elif w['kind'] == RECORDED_KIND:
            # each wrap of the looping trace replays its start: a change
            changes = int(n // w['trace_accesses'])
        else:
            changes = 0
        row['reversal_bound'] = reversal_bound(off, w['kind'],
                                               off_r['total_pages'], changes)
        rows.append(row)
    out = {'accesses': int(accesses), 'seeds': list(seeds),
           'traces': list(traces),
           'methods': [m for m, _ in methods.METHODS], 'rows': rows}
    out['summary'] = summary(rows)
    out['checks'] = checks(rows)
    return out


def _best_limit(res, key, kind, total, off):
    """The fastest of workload ``key``'s ``kind`` runs ('fixed': held
    from the start, 'split': split down to at SPLIT_AT_S), no limit
    (``total``, time ``off``) among them; the higher limit on a tie."""
    times = {k[2]: r['est_time_s'] for k, r in res.items()
             if k[0] == key and k[1] == kind}
    times[total] = off
    best = min(times, key=lambda lim: (times[lim], -lim))
    return {'limit': best, 'vs_off': round(times[best] / off, 4)}


def summary(rows):
    """Worst cases of each method against off and the best fixed limit."""
    out = {}
    for m, _ in methods.METHODS:
        out[m] = {
            'worst_vs_off': max(r[m]['vs_off'] for r in rows),
            'max_reversals': max(r[m]['reversals'] for r in rows),
        }
        for kind in ('fixed', 'split'):
            out[m]['worst_vs_best_%s_stationary' % kind] = max(
                [round(r[m]['vs_off'] / r['best_' + kind]['vs_off'], 4)
                 for r in rows if r['stationary']] or [None])
    return out


def checks(rows):
    m = NEW_METHOD
    out = {
        '%s_never_1pct_slower_than_off' % m:
            all(r[m]['vs_off'] <= 1 + GOAL_VS_OFF for r in rows),
        '%s_reversals_bounded' % m:
            all(r[m]['reversals'] <= r['reversal_bound'] for r in rows),
    }
    for kind in ('fixed', 'split'):
        out['%s_stationary_within_2pct_of_best_%s' % (m, kind)] = all(
            r[m]['vs_off'] <= r['best_' + kind]['vs_off'] * (
                1 + GOAL_VS_BEST_FIXED) for r in rows if r['stationary'])
    return out


def table(out):
    """The workload x method table (Markdown), then the checks."""
    names = out['methods']
    head = ('| seed | workload | VM | ' + ' | '.join(names) +
            ' | best fixed | best split |')
    lines = ['time relative to the controller off; each method: '
             'ratio, converged (s), reversals, splits/restores; best '
             'fixed: the best limit held from the start; best split: the '
             'best limit reached by splitting at %g s in the default '
             'split order, as a controller reaches it' % SPLIT_AT_S,
             '', head, '|' + '---|' * (5 + len(names))]
    for r in out['rows']:
        cells = []
        for m in names:
            x = r[m]
            cells.append('%.4f, %s, %d, %d/%d' % (
                x['vs_off'], '-' if x['converged_s'] is None
                else '%.1f' % x['converged_s'], x['reversals'],
                x['splits'], x['restores']))
        bf = [r.get(k) for k in ('best_fixed', 'best_split')]
        lines.append('| %s | %s: %s | %s | %s | %s |' % (
            '-' if r['seed'] is None else r['seed'], r['kind'], r['what'],
            _mib(r['size_mib']),
            ' | '.join(cells), ' | '.join(
                '%.4f (%d of %d)' % (b['vs_off'], b['limit'],
                                     r['total_pages']) if b else 'n/a'
                for b in bf)))
    lines.append('')
    for m, s in out['summary'].items():
        lines.append('%s: worst vs off %.4f, worst vs best fixed '
                     '(stationary) %s, vs best split %s, most reversals %d'
                     % (m, s['worst_vs_off'],
                        s['worst_vs_best_fixed_stationary'],
                        s['worst_vs_best_split_stationary'],
                        s['max_reversals']))
    for name, ok in out['checks'].items():
        lines.append('  %-4s %s' % ('ok' if ok else 'NO', name))
    return '\n'.join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog='python3 -m nova_tlbbalance.simulate.family',
        description='every controller method on a seeded workload family')
    ap.add_argument('--seeds', default=','.join(map(str, CI_SEEDS)))
    ap.add_argument('--traces', default=','.join(RECORDED),
                    help='recorded programs of tlbsim/traces/recorded '
                    '(comma-separated; "" for none)')
    ap.add_argument('--trace-accesses', type=float, default=None,
                    help='accesses per run on a trace (default: as the '
                    'seeds)')
    ap.add_argument('--accesses', type=float, default=None)
    ap.add_argument('--long', action='store_true',
                    help='runs of %g accesses instead of %g'
                    % (LONG_ACCESSES, CI_ACCESSES))
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--json', action='store_true')
    args = ap.parse_args(argv)
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as exc:
        ap.error(str(exc))
    traces = [t for t in args.traces.split(',') if t]
    try:
        for t in traces:
            recorded_path(t)
    except ValueError as exc:
        ap.error('--traces: %s' % exc)
    n = args.accesses or (LONG_ACCESSES if args.long else CI_ACCESSES)
    out = evaluate(seeds, n, jobs=args.jobs, traces=traces,
                   trace_accesses=args.trace_accesses)
    print(json.dumps(out, indent=1) if args.json else table(out))
    return 0 if all(out['checks'].values()) else 1


if __name__ == '__main__':
    sys.exit(main())
