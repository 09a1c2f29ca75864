# SPDX-License-Identifier: Apache-2.0
"""Every controller method on a workload family drawn from seeds.

nova_tlbbalance/simulate/family.py draws one workload per seed (hot sets
drifting slow to fast, hot sets at the bottom, middle and top of memory,
scattered mixtures, bursty phases; VMs of 128 MiB to 64 GiB) and runs the
controller off, each method, and on the stationary workloads limits held
from the start. The goals of docs/simulator.md ("A workload family") for
the new method (method safe, ``method=2``) are asserted here: never more
than 1 % slower than the controller off, within 2 % of the best fixed
limit on the stationary workloads, reversals bounded. The table
(workload x method) is printed
(``pytest -s``, or in the failure message).

CI runs the seeds of ``family.CI_SEEDS`` with short runs
(``family.CI_ACCESSES``, about 20 simulated seconds each); the long runs
are ``python3 -m nova_tlbbalance.simulate.family --long`` (docs/simulator.md
has their table), and ``TLBB_SIM_FAMILY_LONG=1`` makes this test use them.
The recorded real programs of tlbsim/traces/recorded (sqlite, gcc's cc1,
sysbench memory: committed traces, so no valgrind here) are rows of the
same table and under the same checks (never 1 % slower than the
controller off, reversals bounded), replayed looping for
``family.CI_TRACE_ACCESSES`` accesses.
The issue's two cases (a drifting hot set and a hot set at the top, where
the paper's method and hill were slower than no controller) are run as
they were reported, on 3e8 accesses.
"""

import json
import os

import pytest

from nova_tlbbalance.simulate import engine
from nova_tlbbalance.simulate import family
from nova_tlbbalance.simulate import methods

# The issue's two cases, as reproduced here (docs/simulator.md).
DRIFT = 'hotcold:size=4G,hot=512M,hot_frac=0.95,drift=16M,' \
        'drift_every=1000000'
TOP = 'hotcold:size=4G,hot=512M,hot_frac=0.95,hot_at=3584M'
ISSUE_ACCESSES = 3e8


@pytest.fixture(scope='module')
def out(tlbsim):
    long_run = os.environ.get('TLBB_SIM_FAMILY_LONG') == '1'
    res = family.evaluate(
        family.CI_SEEDS,
        family.LONG_ACCESSES if long_run else family.CI_ACCESSES,
        tlbsim=tlbsim,
        trace_accesses=None if long_run else family.CI_TRACE_ACCESSES)
    print('\n' + family.table(res))
    return res


def test_family_covers_every_kind_and_size_range():
    wls = [family.workload(s) for s in family.CI_SEEDS]
    assert {w['kind'] for w in wls} == set(family.KINDS)
    assert {w['what'] for w in wls if w['kind'] == 'place'} == {
        'bottom', 'middle', 'top'}
    assert {w['what'] for w in wls if w['kind'] == 'drift'} == {
        'speed 0.25', 'speed 1', 'speed 4'}
    sizes = {w['size_mib'] for w in wls}
    assert min(sizes) <= 512 and max(sizes) >= 16384
    # a seed always gives the same workload
    assert family.workload(7) == family.workload(7)


def test_recorded_programs_are_committed_and_small(tlbsim):
    """A database, a compiler and sysbench memory, each a small file
    (tlbsim/traces/recorded/README.md), readable by tlbsim."""
    assert set(family.RECORDED) == {'sqlite', 'cc1', 'sysbench-memory'}
    total = 0
    for name in family.RECORDED:
        path = family.recorded_path(name)
        size = path.stat().st_size
        assert size <= 1600000, (path, size)
        total += size
        w = family.recorded(name, tlbsim)
        assert w['kind'] == family.RECORDED_KIND and not w['stationary']
        assert w['trace_accesses'] >= 1000000, w
    assert total <= 5000000
    with pytest.raises(ValueError, match="'nosuch'"):
        family.recorded('nosuch', tlbsim)


def test_recorded_programs_in_the_family(out):
    """Each recording is a row of the table, under the family's checks:
    safe never more than 1 % slower than the controller off, its
    reversals within the bound."""
    rows = {r['what']: r for r in out['rows']
            if r['kind'] == family.RECORDED_KIND}
    assert set(rows) == set(family.RECORDED)
    m = family.NEW_METHOD
    for name, r in rows.items():
        assert r['accesses'] == int(family.CI_TRACE_ACCESSES) or \
            os.environ.get('TLBB_SIM_FAMILY_LONG') == '1'
        assert r[m]['vs_off'] <= 1 + family.GOAL_VS_OFF, (name, r[m])
        assert r[m]['reversals'] <= r['reversal_bound'], (name, r[m])
        assert r['total_pages'] >= 1
    # not a vacuous pass: sysbench's random reads over 2 GiB thrash the
    # VTLB with both THP levels, and the controller acts there
    assert rows['sysbench-memory'][m]['splits'] > 0
    text = family.table(out)
    for name in family.RECORDED:
        assert '| recorded: %s |' % name in text


def test_seeds_parse_and_name_the_culprit():
    assert family.parse_seeds('0-3,9') == [0, 1, 2, 3, 9]
    with pytest.raises(ValueError, match="'x-2'"):
        family.parse_seeds('x-2')


def test_safe_never_1pct_slower_than_off_and_bounded(out):
    m = family.NEW_METHOD
    for name in ('%s_never_1pct_slower_than_off' % m,
                 '%s_reversals_bounded' % m):
        assert out['checks'][name], (name, family.table(out))
    worst = out['summary'][m]
    assert worst['worst_vs_off'] <= 1 + family.GOAL_VS_OFF
    # the family makes the controller act somewhere: not a vacuous pass
    assert any(r[m]['splits'] for r in out['rows'])
    # and where the others lose against no controller, it does not
    assert max(r['hill']['vs_off'] for r in out['rows']) > 1 + \
        family.GOAL_VS_OFF


def test_safe_at_least_as_close_to_best_fixed_as_the_others(out):
    for r in out['rows']:
        if r['stationary']:
            best = r['best_fixed']['vs_off']
            safe = r[family.NEW_METHOD]['vs_off']
            assert safe <= max(r['paper']['vs_off'], r['hill']['vs_off'],
                               best * (1 + family.GOAL_VS_BEST_FIXED)), r


def test_safe_within_2pct_of_best_fixed_on_stationary(out):
    """Met since method safe splits by heat (safe_split_heat, default 1):
    on seed 9 (hot set at the top of a 4 GiB VM) address order split the
    hot set and safe ended 7.5 % from the best limit held from the start.
    """
    name = '%s_stationary_within_2pct_of_best_fixed' % family.NEW_METHOD
    assert out['checks'][name], family.table(out)
    top = [r for r in out['rows'] if r.get('seed') == 9]
    assert top, 'seed 9 (place: top) is one of the CI seeds'
    best = top[0]['best_fixed']['vs_off']
    assert best < 0.95     # holding a limit pays there: not vacuous
    assert top[0][family.NEW_METHOD]['vs_off'] <= \
        best * (1 + family.GOAL_VS_BEST_FIXED), family.table(out)


@pytest.mark.parametrize('at', ['3072M', '0M'], ids=['top', 'bottom'])
def test_safe_keeps_seed_9s_hot_set_at_either_end(tlbsim, at):
    """Seed 9's hot set at the top (as drawn) and mirrored to the bottom:
    no address order keeps both (highest first splits the top one, lowest
    first the bottom one); heat, sampled by frequency (several windows a
    tick), keeps either. Method safe within 2 % of the limit held from
    the start at the hot set's 32 of 128 pages."""
    spec = family.workload(9)['spec']
    assert 'hot_at=3072M' in spec
    spec = spec.replace('hot_at=3072M', 'hot_at=' + at)

    def one(cfg):
        return engine.run(cfg, workload=spec, accesses=family.CI_ACCESSES,
                          tlbsim=tlbsim, series=False)['est_time_s']

    off = one(engine.Config('off'))
    held = one(engine.Config('fixed-32', huge_limit=32)) / off
    safe = one(methods.config('safe', 2)) / off
    print('%s: held 32 %.4f, safe %.4f of the controller off'
          % (spec, held, safe))
    assert held < 0.95
    assert safe <= held * (1 + family.GOAL_VS_BEST_FIXED)


def test_safe_within_2pct_of_best_limit_reached_by_splitting(out):
    """The same goal against the limits a controller can reach: held by
    the limiter from 1 s on, split in the default order."""
    name = '%s_stationary_within_2pct_of_best_split' % family.NEW_METHOD
    assert out['checks'][name], family.table(out)
    # the comparison is not vacuous: some stationary workload has a
    # reachable limit below all of its pages that beats no controller
    assert any(r['best_split']['limit'] < r['total_pages'] and
               r['best_split']['vs_off'] < 1 for r in out['rows']
               if r['stationary'])


def test_table_has_every_method_and_the_best_fixed_limit(out):
    text = family.table(out)
    for m, _ in methods.METHODS:
        assert m in text.splitlines()[2]
    assert 'best fixed' in text
    json.dumps(out)     # the JSON form is whole


@pytest.mark.parametrize('spec', [DRIFT, TOP], ids=['drift', 'top'])
def test_issue_cases(tlbsim, spec):
    """The paper's method is slower than no controller on both (the
    issue's finding, reproduced); method safe is not (by more than 1 %).
    """
    def one(cfg):
        return engine.run(cfg, workload=spec, accesses=ISSUE_ACCESSES,
                          tlbsim=tlbsim, series=False)['est_time_s']

    off = one(engine.Config('off'))
    paper = one(methods.config('paper', 0)) / off
    safe = one(methods.config('safe', 2)) / off
    print('%s: paper %.4f, safe %.4f of the controller off'
          % (spec, paper, safe))
    assert paper > 1.05
    assert safe <= 1 + family.GOAL_VS_OFF
