# SPDX-License-Identifier: Apache-2.0
"""Where huge pages help, the controller changes little and never swings.

Each workload runs in a VM with both THP levels, without and with the
controller (defaults from tlbb_params.def), on the GS464V preset with the
uniform cost model these cases were chosen in (access_ns 100, refill_ns
150: with the fitted costs accesses are slower, the refill load of the
4 GiB hot/cold case stays below the threshold and the controller would not
even look). The controller must change the estimated time by less than
1 % and its limit must never reverse direction (lower, then raise, or
back). Method hill on these and more: tests/sim/test_methods.py.
"""

import pytest

from nova_tlbbalance.simulate import engine

CASES = [
    # a sequential stream: almost no refills, the controller stays idle
    ('seq:size=1G', True, 5e7),
    # a small hot set inside a footprint the VTLB covers in a VM
    ('hotcold:size=1G,hot=32M,hot_frac=0.9', True, 5e7),
    # a small hot set in 4 GiB: cold accesses load the VTLB, so the
    # controller engages and splits cold huge pages, to little effect
    ('hotcold:size=4G,hot=64M,hot_frac=0.95', True, 1.5e8),
    # guest small pages, host THP: the load sits on the small group and
    # every page may already be huge: the controller looks and declines
    ('chase:size=1G', False, 1e8),
]


@pytest.mark.parametrize('workload, guest_thp, accesses', CASES)
def test_controller_harmless_where_huge_pages_help(tlbsim, workload,
                                                   guest_thp, accesses):
    def one(ctrl):
        cfg = engine.Config(ctrl, thp_guest=guest_thp, thp_host=True,
                            controller=ctrl)
        return engine.run(cfg, workload=workload, accesses=accesses,
                          tlbsim=tlbsim, access_ns=100, refill_ns=150)

    off, on = one('off'), one('balance')
    change = on['est_time_s'] / off['est_time_s'] - 1
    assert abs(change) < 0.01, (workload, change)
    assert on['reversals'] == 0
    assert on['restores'] == 0
    limits = on['series']['huge_limit']
    assert all(b <= a for a, b in zip(limits, limits[1:])), workload
    if workload.startswith(('hotcold:size=4G', 'chase')):
        # it did look: it reached the counting stage
        assert on['ticks'] > 0 and set(on['series']['state']) & {
            'counting', 'lowering'}, workload
