# SPDX-License-Identifier: Apache-2.0
"""Which huge pages to split: ``simulate --compare-split-orders``.

The one command prints address order, random and heat-aware splitting side
by side on the mcf-like, hot/cold and scattered workloads and a real
program's trace (GNU sort, recorded here with valgrind as test_traces
does), with its ``checks``; on the shortened runs this asserts them: heat
never worse than address order, and clearly better wherever the hot set is
not where address order keeps it.
"""

import json

from nova_tlbbalance.cli import main


def test_compare_split_orders_short(capsys, tlbsim, sort_trace):
    proc, trace = sort_trace
    assert proc.returncode == 0, proc.stderr
    rc = main(['simulate', '--compare-split-orders', '--short', '--json',
               '--trace', str(trace)])
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert rc == 0, (summary['checks'], err)
    assert summary['checks'] == {
        'heat_never_worse': True,
        'heat_beats_address_where_hot_set_out_of_order': True}
    cases = {c['name']: c for c in summary['cases']}
    assert set(cases) >= {'mcf', 'hotcold-low-held', 'hotcold-high-held',
                          'scattered-held', 'trace:sort.trc.gz'}
    # mcf-like: every huge page is hot, heat ties and keeps address order
    assert cases['mcf']['heat_vs_address'] == 1.0
    # a hot set at the top: address order splits it, heat keeps it
    assert cases['hotcold-high-held']['heat_vs_address'] < 0.8
    for c in cases.values():
        if c['limit'] != 'controller':
            # the held limit was reached in every order
            held = {o['huge_pages'] for o in c['orders'].values()}
            assert len(held) == 1, c
    assert cases['trace:sort.trc.gz']['orders']['heat']['splits'] > 0
