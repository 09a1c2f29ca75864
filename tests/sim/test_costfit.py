# SPDX-License-Identifier: Apache-2.0
"""The gs464v cost model is the fit to the paper's figures, and only that.

nova_tlbbalance.simulate.costfit solves for access_ns and the base- and
huge-page refill costs from the paper's figure-7 refill rates and its VM
without THP; tlbsim/presets/gs464v.tlb must hold what the fit gives
(`costfit --check`), so the constants are never tuned by hand.
"""

import pytest

from nova_tlbbalance.simulate import costfit
from nova_tlbbalance.simulate import engine
from nova_tlbbalance.simulate import paper


def test_fit_recovers_known_constants():
    # counts per access, and the times the paper's figures then imply
    counts = {'vm-both-thp': {'base': 0.0, 'huge': 0.7},
              'vm-guest-thp': {'base': 0.3, 'huge': 0.0},
              'vm-no-thp': {'base': 0.95, 'huge': 0.0}}
    fit = costfit.fit(counts)
    t = fit['target_ns_per_access']
    assert t['vm-both-thp'] == pytest.approx(0.7 / 2.18e6 * 1e9, abs=0.01)
    assert t['vm-no-thp'] == pytest.approx(
        t['vm-both-thp'] / paper.PAPER_SPEEDUP['vm-no-thp'][1], abs=0.01)
    for name, c in counts.items():
        model = (fit['access_ns'] + c['base'] * fit['refill_ns']
                 + c['huge'] * fit['huge_refill_ns'])
        assert model == pytest.approx(t[name], abs=0.2), name
    assert fit['guest_refill_ns'] == fit['host_refill_ns'] == \
        fit['refill_ns']


def test_singular_fit_is_refused():
    same = {'base': 0.3, 'huge': 0.0}
    with pytest.raises(ValueError, match='singular'):
        costfit.fit({'vm-both-thp': same, 'vm-guest-thp': same,
                     'vm-no-thp': same})


def test_preset_holds_the_fit(tlbsim):
    fit = costfit.fit(costfit.measure(tlbsim=tlbsim))
    preset = engine.tlbsim_dir() / 'presets' / 'gs464v.tlb'
    have = costfit.preset_costs(preset.read_text())
    for key in costfit.KEYS:
        assert have[key] == pytest.approx(fit[key], abs=0.051), key
