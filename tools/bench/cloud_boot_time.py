#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""POST /servers to ACTIVE, tagged flavor beside untagged, on the cloud in
a box: what the driver plugin and the hook add to a boot.

    tools/cloud/cloud.py up
    tools/bench/cloud_boot_time.py [--rounds 8] [--ram 64]
    tools/cloud/cloud.py down

Two flavors of the same size, one with ``tlbbalance:mode=monitor`` (THP
backing, the hook's prepare and started phases), one without. Each round
boots one server of each, in alternating order, one at a time, and deletes
it; the figures are medians over the rounds, measured side by side in one
run (the machine is shared and noisy). Both go through the same scheduler
and compute hosts. The tagged flavor sets nothing else, so it gets the
defaults: since the prefault default turned false it does not pre-fault
its RAM; ``--variant prefault=tlbbalance:mode=monitor,tlbbalance:prefault=
true`` measures a flavor that does (``<allocation mode='immediate'>``).
Without a cloud (no ``cloud.json`` under ``TLBB_CLOUD_DIR``, or nothing
answering at its URL) it says so and exits 2.

``--variant NAME=KEY=VALUE[,KEY=VALUE...]`` (repeatable) adds flavors
with other extra specs to the same rounds, e.g. where the time goes:
``--variant meta-only=tlbbalance:mode=monitor,tlbbalance:backing=none``
(the plugin and the hook, no memory backing). Each is printed against
the untagged flavor.

Besides the medians it prints the per-round ratios and differences (each
round's boots are side by side), a bootstrap interval of the per-round
ratio's median and what it says of the 5 % goal (met, missed, or not
resolved by this many rounds: single boots here vary by +-20 %), and,
from the compute hosts' hook logs (``hook_log`` in cloud.json), the
hook's own records of this run's tagged boots: each phase's time in its
process (``elapsed_ms``) and the share of it that is work, not imports
(``work_ms``).
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, 'tools', 'cloud'))

import api  # noqa: E402
import cloud  # noqa: E402
import procs  # noqa: E402


def boot_once(adm, flavor, image, name, timeout):
    t0 = time.monotonic()
    s = adm.post('compute:/servers', {'server': {
        'name': name, 'flavorRef': flavor, 'imageRef': image,
        'networks': 'none'}},
        headers={'OpenStack-API-Version': 'compute 2.86'})['server']
    # polled every 0.1 s: a boot here takes 1-2 s
    api.wait_server_status(adm, s['id'], 'ACTIVE', timeout, interval=0.1)
    took = time.monotonic() - t0
    adm.delete('compute:/servers/%s' % s['id'])

    def gone():
        try:
            adm.get('compute:/servers/%s' % s['id'])
        except api.ApiError as exc:
            if exc.status == 404:
                return True
            raise
        return False
    procs.wait_until('server %s deleted' % s['id'], gone, timeout, 0.5)
    return took


def cloud_facts():
    """cloud.json of the cloud in a box, or why there is no cloud to
    measure (a sentence naming the file or the URL)."""
    path = os.path.join(cloud.top_dir(), 'cloud.json')
    try:
        with open(path) as f:
            facts = json.load(f)
    except FileNotFoundError:
        return ('no cloud: %s does not exist (start one with '
                'tools/cloud/cloud.py up, with the same TLBB_CLOUD_DIR)'
                % path)
    except (OSError, ValueError) as exc:
        return 'cannot read %s: %s' % (path, exc)
    url = facts.get('auth_url') if isinstance(facts, dict) else None
    if not url or not api.reachable(url):
        return ('no cloud answers at %s (from %s): is it up? '
                '(tools/cloud/cloud.py status)' % (url, path))
    return facts


# The goal (docs/cloud.md, "Boot time"): a tagged boot of the
# default flavor within 5 % of an untagged one.
GOAL_RATIO = 1.05
# ... as the median of at least this many side-by-side rounds; a bootstrap
# over fewer says nothing (two rounds gave "0.45-1.04").
GOAL_ROUNDS = 10


def interval(tagged, untagged, resamples=2000, level=0.90, seed=0):
    """Bootstrap interval (level, two-sided) of the per-round ratio's
    median: rounds resampled with replacement, each round keeping its two
    boots together. Seeded: the same boots print the same interval."""
    pairs = [a / b for a, b in zip(tagged, untagged)]
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(pairs, k=len(pairs)))
                  for _ in range(resamples))
    cut = int(resamples * (1 - level) / 2)
    return meds[cut], meds[-cut - 1]


def verdict(low, high, rounds, goal=GOAL_RATIO):
    """What an interval over this many rounds says of the goal: met,
    missed, or not resolved (too few rounds, or an interval across it)."""
    if rounds < GOAL_ROUNDS:
        return ('not resolved: %d round(s), the goal asks for at least %d'
                % (rounds, GOAL_ROUNDS))
    if high <= goal:
        return 'met (the interval is under %.2f)' % goal
    if low > goal:
        return 'missed (the interval is over %.2f)' % goal
    return ('not resolved: the interval spans %.2f (more rounds, or a '
            'quieter machine)' % goal)


def hook_offsets(facts):
    """{hook log: size now}: where this run's records begin."""
    out = {}
    for h in facts.get('hosts', []):
        path = h.get('hook_log')
        if path:
            try:
                out[path] = os.path.getsize(path)
            except OSError:
                out[path] = 0
    return out


def hook_records(offsets):
    """The hook's JSON records appended since offsets (one per phase of
    a tagged domain; untagged domains leave none)."""
    recs = []
    for path, start in offsets.items():
        try:
            with open(path, 'rb') as f:
                f.seek(start)
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    return recs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--rounds', type=int, default=8)
    p.add_argument('--ram', type=int, default=64, help='MiB per server')
    p.add_argument('--timeout', type=int, default=300)
    p.add_argument('--variant', action='append', default=[],
                   metavar='NAME=KEY=VALUE[,KEY=VALUE]',
                   help='another flavor with these extra specs')
    args = p.parse_args(argv)
    kinds = [('untagged', {}), ('tagged', {'tlbbalance:mode': 'monitor'})]
    for v in args.variant:
        name, _, specs = v.partition('=')
        try:
            kinds.append((name, dict(kv.split('=', 1)
                                     for kv in specs.split(','))))
        except ValueError:
            p.error('--variant %r: NAME=KEY=VALUE[,KEY=VALUE...]' % v)
    facts = cloud_facts()
    if isinstance(facts, str):
        sys.stderr.write('cloud_boot_time: %s\n' % facts)
        return 2
    adm = api.Client(facts['auth_url'],
                     password=facts['admin']['password']).authenticate()
    image = facts['images']['tlbb-payload']
    hdr = {'OpenStack-API-Version': 'compute 2.86'}
    flavors = {}
    for kind, specs in kinds:
        f = adm.post('compute:/flavors', {'flavor': {
            'name': 'bench-%s-%d' % (kind, os.getpid()), 'ram': args.ram,
            'vcpus': 1, 'disk': 1}})['flavor']
        if specs:
            adm.post('compute:/flavors/%s/os-extra_specs' % f['id'],
                     {'extra_specs': specs}, headers=hdr)
        flavors[kind] = f['id']
    times = {k: [] for k, _ in kinds}
    offsets = hook_offsets(facts)
    print('load average at start: %.2f %.2f %.2f' % os.getloadavg(),
          flush=True)
    try:
        for r in range(args.rounds):
            # each flavor first in turn, so none always follows another
            order = [k for k, _ in kinds]
            order = order[r % len(order):] + order[:r % len(order)]
            for kind in order:
                t = boot_once(adm, flavors[kind], image,
                              'bench-%s-%d' % (kind, r), args.timeout)
                times[kind].append(t)
                print('round %d %-8s %.2f s' % (r, kind, t), flush=True)
    finally:
        for fid in flavors.values():
            adm.delete('compute:/flavors/%s' % fid)
    med = {k: statistics.median(v) for k, v in times.items()}
    print('POST /servers -> ACTIVE, %d rounds, %d MiB: untagged median '
          '%.2f s (min %.2f), tagged median %.2f s (min %.2f); tagged / '
          'untagged = %.3f' % (args.rounds, args.ram, med['untagged'],
                               min(times['untagged']), med['tagged'],
                               min(times['tagged']),
                               med['tagged'] / med['untagged']))
    for kind, specs in kinds[2:]:
        print('  %s (%s): median %.2f s (min %.2f); / untagged = %.3f'
              % (kind, ','.join('%s=%s' % i for i in sorted(specs.items())),
                 med[kind], min(times[kind]),
                 med[kind] / med['untagged']))
    print('per round, side by side (median over the rounds):')
    ranges = {}
    for kind, _ in kinds[1:]:
        pairs = list(zip(times[kind], times['untagged']))
        ranges[kind] = low, high = interval(times[kind], times['untagged'])
        print('  %-9s / untagged %.3f (90 %% bootstrap interval %.3f-%.3f),'
              ' minus untagged %+.3f s' % (
                  kind, statistics.median(a / b for a, b in pairs),
                  low, high, statistics.median(a - b for a, b in pairs)))
    low, high = ranges['tagged']
    print('the %d %% goal for the default tagged flavor: %s'
          % (round((GOAL_RATIO - 1) * 100),
             verdict(low, high, args.rounds)))
    recs = hook_records(offsets)
    print("the hook's records of this run's tagged boots (in its process; "
          'work_ms: without the imports):')
    for phase in ('prepare', 'started', 'stopped', 'release'):
        ph = [r for r in recs if r.get('phase') == phase]
        if ph:
            print('  %-8s n=%d, elapsed_ms median %.1f, work_ms median %.1f'
                  % (phase, len(ph),
                     statistics.median(r.get('elapsed_ms', 0) for r in ph),
                     statistics.median(r.get('work_ms', 0) for r in ph)))
    if not recs:
        print('  none (no hook_log in cloud.json, or the hook logs no '
              'JSON lines)')
    print('load average at end: %.2f %.2f %.2f' % os.getloadavg())
    return 0


if __name__ == '__main__':
    sys.exit(main())
