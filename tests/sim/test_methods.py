# SPDX-License-Identifier: Apache-2.0
"""The controller's methods side by side: the goals as checks.

``tlbbalance simulate --paper --compare-methods --json`` runs the paper's
method and the hill method (tlbb_params.def ``method`` 0 and 1) on the
paper's mcf comparison, on a 62 s run, on the workloads where huge pages
help and on recorded real-program traces, in the uniform cost model (where
the issue set its goals) and in the fitted one (the gs464v preset), and
prints the goals as ``checks``. This test asserts every check on a
shortened run: a fifth of the paper's length with a fifth of the paper
method's sustain period (as tests/sim/test_paper.py), the short helpful
set, and one real program recorded here with valgrind (sort, 2 M accesses,
looped to 2e8), so that the trace check sees a real trace, not none.
"""

import json
import pathlib
import subprocess

import pytest

from nova_tlbbalance.simulate import engine
from nova_tlbbalance.simulate import methods

REPO = pathlib.Path(__file__).resolve().parents[2]
RECORD = REPO / 'tlbsim' / 'traces' / 'record.sh'


@pytest.fixture(scope='module')
def out(tlbsim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('traces')
    data = tmp / 'in.txt'
    data.write_text(''.join('%08x\n' % ((i * 2654435761) % 2 ** 32)
                            for i in range(100000)))
    proc = subprocess.run(
        [str(RECORD), '-n', '2000000', str(tmp / 'sort.trc.gz'), '--',
         '/usr/bin/sort', str(data)], capture_output=True, text=True,
        timeout=900, env={'PATH': '/usr/bin:/bin', 'LC_ALL': 'C'})
    assert proc.returncode == 0, proc.stderr
    return methods.compare(scale=0.2, short=True, trace_dir=str(tmp),
                           params=engine.parse_params(['sustain_ms=2000']))


def test_every_goal_met(out):
    failed = [name for name, ok in out['checks'].items() if not ok]
    assert not failed, json.dumps(out, indent=1)


def test_hill_finds_the_best_limit_quickly(out):
    for model in ('uniform', 'fitted'):
        hill = out[model]['methods']['hill']
        assert hill['first_change_s'] <= 2.0, (model, hill)
        assert 12 <= hill['final_huge_limit'] <= 15, (model, hill)
        assert hill['reversals'] <= 1, (model, hill)
    # the paper's method is unchanged: it stops where the threshold says
    assert out['uniform']['methods']['paper']['final_huge_limit'] == 18


def test_paper_figures_printed_beside_simulated(out):
    figs = {f['config']: f for f in out['fitted']['paper_figures']}
    assert set(figs) >= {'vm-both-thp', 'vm-guest-thp', 'native-huge',
                         'vm-no-thp', 'vm-both-thp-controller'}
    for f in figs.values():
        assert abs(f['simulated'] / f['paper'] - 1) <= 0.05, f
