# SPDX-License-Identifier: Apache-2.0
"""Fit the gs464v cost model to the paper's figures, once.

``python3 -m nova_tlbbalance.simulate.costfit`` runs the mcf-like workload
(controller off) in three VM configurations, counts its refills per access
by kind, and solves for the three constants of the model that make the
paper's figures exact:

* ``access_ns``: one access that hits the TLB;
* ``refill_ns``: a base-page refill, native or of either stage in a VM
  (``guest_refill_ns`` = ``host_refill_ns`` = ``refill_ns``: the paper's
  figures hold no configuration that tells the two stages apart);
* ``huge_refill_ns``: a huge-page refill in a VM (the VTLB), either stage.

The three figures: both THP levels refill 2.18 M/s and host THP off
1.28 M/s (the paper's figure 7), and the VM without THP is 9.2 % faster
than with both levels. Estimated time per access is then
``access_ns + base refills x refill_ns + huge refills x huge_refill_ns``,
a linear system in the three constants. The refill counts do not depend on
the constants (no controller), so one pass is the fit. The result is what
``tlbsim/presets/gs464v.tlb`` holds (rounded to 0.1 ns); ``--check`` fails
if the preset differs. Everything else (native THP's speed-up, the
controller's) is then predicted, not fitted.
"""

import argparse
import json
import sys

from nova_tlbbalance.simulate import engine
from nova_tlbbalance.simulate import paper

FIT_CONFIGS = ('vm-both-thp', 'vm-guest-thp', 'vm-no-thp')
FIT_ACCESSES = 1e8
KEYS = ('access_ns', 'refill_ns', 'guest_refill_ns', 'host_refill_ns',
        'huge_refill_ns')


def _det3(m):
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))


def solve3(m, v):
    """Cramer's rule for a 3x3 system m x = v."""
    d = _det3(m)
    if not d:
        raise ValueError('the fit configurations do not determine the '
                         'model (singular system)')
    out = []
    for col in range(3):
        mc = [row[:col] + [v[i]] + row[col + 1:] for i, row in enumerate(m)]
        out.append(_det3(mc) / d)
    return out


def target_ns_per_access(counts):
    """Time per access the paper's figures imply for each fit config."""
    both = counts['vm-both-thp']
    t_both = (both['base'] + both['huge']) / paper.PAPER_REFILLS_PER_S[
        'vm-both-thp'] * 1e9
    off = counts['vm-guest-thp']
    t_off = (off['base'] + off['huge']) / paper.PAPER_REFILLS_PER_S[
        'vm-guest-thp'] * 1e9
    ref, speedup = paper.PAPER_SPEEDUP['vm-no-thp']
    assert ref == 'vm-both-thp'
    return {'vm-both-thp': t_both, 'vm-guest-thp': t_off,
            'vm-no-thp': t_both / speedup}


def fit(counts):
    """``counts``: config -> {'base', 'huge'} refills per access."""
    target = target_ns_per_access(counts)
    m = [[1.0, counts[c]['base'], counts[c]['huge']] for c in FIT_CONFIGS]
    a, base, huge = solve3(m, [target[c] for c in FIT_CONFIGS])
    if min(a, base, huge) <= 0:
        raise ValueError('fit gives a cost <= 0: %r' % ((a, base, huge),))
    return {'access_ns': round(a, 1), 'refill_ns': round(base, 1),
            'guest_refill_ns': round(base, 1),
            'host_refill_ns': round(base, 1),
            'huge_refill_ns': round(huge, 1),
            'target_ns_per_access': {k: round(v, 2)
                                     for k, v in target.items()}}


def measure(accesses=FIT_ACCESSES, tlbsim=None):
    cfgs = {c.name: c for c in paper.CONFIGS}
    counts = {}
    for name in FIT_CONFIGS:
        r = engine.run(cfgs[name], accesses=accesses, series=False,
                       tlbsim=tlbsim)
        n = r['accesses']
        counts[name] = {'base': r['refills_small'] / n,
                        'huge': r['refills_huge'] / n}
    return counts


def preset_costs(text):
    out = {}
    for line in text.splitlines():
        words = line.split('#')[0].split()
        if len(words) == 2 and words[0] in KEYS:
            out[words[0]] = float(words[1])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--check', action='store_true',
                    help='fail unless tlbsim/presets/gs464v.tlb holds '
                         'the fitted constants')
    args = ap.parse_args(argv)
    counts = measure()
    out = {'refills_per_access': counts, 'fit': fit(counts)}
    preset = engine.tlbsim_dir() / 'presets' / 'gs464v.tlb'
    have = preset_costs(preset.read_text())
    out['preset'] = have
    print(json.dumps(out, indent=2))
    if args.check:
        bad = [k for k in KEYS if abs(have.get(k, -1) - out['fit'][k])
               > 0.051]
        if bad:
            sys.stderr.write('%s: %s differ from the fit\n'
                             % (preset, ', '.join(bad)))
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
