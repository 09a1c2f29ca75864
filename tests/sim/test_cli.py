# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance simulate``: options, output formats, errors."""

import csv
import json

import pytest

from nova_tlbbalance.cli import main


def run_cli(capsys, *argv):
    rc = main(['simulate'] + list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_one_run_json(capsys):
    rc, out, _ = run_cli(capsys, '--workload', 'seq:size=256M,stride=16K',
                         '--accesses', '1e6', '--json')
    assert rc == 0
    res = json.loads(out)
    assert res['machine'] == 'gs464v'
    assert res['model'] == 'vz'
    assert res['accesses'] == 1000000
    # 8 guest huge pages + 8 host huge pages, each refilled once
    assert res['refills_huge'] == 16
    assert res['refills_small'] == 0
    assert [g['name'] for g in res['groups']] == ['VTLB', 'FTLB']


def test_one_run_text_csv_plot(capsys, tmp_path):
    png = tmp_path / 'run.png'
    series = tmp_path / 'series.csv'
    rc, out, _ = run_cli(capsys, '--workload', 'mcf', '--accesses', '3e6',
                         '--controller', 'balance', '--param',
                         'sustain_ms=100', '--plot', str(png), '--csv',
                         str(series))
    assert rc == 0
    assert 'VTLB' in out and 'estimated time' in out
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert png.stat().st_size > 10000
    rows = list(csv.DictReader(series.open()))
    assert rows and set(rows[0]) >= {'t_s', 'refills_huge', 'huge_limit'}
    # the controller acted within the 3 M accesses (0.6 simulated s)
    assert min(int(r['huge_limit']) for r in rows) < 50


def test_misaligned_memslot_forces_small_stage2(capsys):
    rc, out, _ = run_cli(capsys, '--workload', 'seq:size=256M,stride=16K',
                         '--accesses', '1e6', '--hva-offset', '16384',
                         '--json')
    res = json.loads(out)
    assert rc == 0
    assert res['refills_huge'] == 8          # only the guest's entries
    assert res['refills_small'] > 1000       # stage 2 in 16 KiB pages


def test_machine_file_and_intel_preset(capsys, tmp_path):
    geo = tmp_path / 'tiny.tlb'
    geo.write_text('name tiny\nbase_page 4K\nhuge_page 2M\n'
                   'group T entries=16 ways=4 sizes=base,huge\n'
                   'two_stage combined\naccess_ns 10\n')
    rc, out, _ = run_cli(capsys, '--machine', str(geo), '--accesses', '1e5',
                         '--workload', 'chase:size=64M', '--json')
    assert rc == 0
    assert json.loads(out)['model'] == 'combined'
    rc, out, _ = run_cli(capsys, '--machine', 'intel', '--accesses', '1e5',
                         '--json')
    assert rc == 0
    assert [g['name'] for g in json.loads(out)['groups']] == [
        'L1_4K', 'L1_2M', 'STLB']


@pytest.mark.parametrize('argv, needle', [
    (['--param', 'imbalance_threshold=0'], 'imbalance_threshold: 0 is '
     'outside'),
    (['--param', 'nope=3'], "unknown tlbbalance parameter 'nope'"),
    (['--param', 'samples'], 'use NAME=VALUE'),
    (['--machine', 'z80'], "machine 'z80': no such preset"),
    (['--workload', 'zipf'], "unknown kind 'zipf'"),
    (['--model', 'native', '--controller', 'balance'], 'needs a VM model'),
    (['--accesses', '-5'], '--accesses must be positive'),
])
def test_errors_name_the_culprit(capsys, argv, needle):
    rc, _, err = run_cli(capsys, *argv)
    assert rc == 2
    assert needle in err


def test_paper_json_shape(capsys):
    """The --paper JSON as the issue specifies it (a short run)."""
    rc, out, _ = run_cli(capsys, '--paper', '--json', '--accesses', '2e6')
    assert rc == 0
    res = json.loads(out)
    names = [c['name'] for c in res['configs']]
    assert names == ['native-small', 'native-huge', 'vm-no-thp',
                     'vm-guest-thp', 'vm-host-thp', 'vm-both-thp',
                     'vm-both-thp-controller']
    for c in res['configs']:
        assert {'name', 'refills_huge', 'refills_small',
                'est_time_s'} <= set(c)
        assert isinstance(c['est_time_s'], float)
    by = {c['name']: c for c in res['configs']}
    assert res['ratio_controller_vs_both_thp'] == pytest.approx(
        by['vm-both-thp-controller']['est_time_s']
        / by['vm-both-thp']['est_time_s'], rel=1e-3)
    assert res['ratio_controller_vs_host_thp_off'] == pytest.approx(
        by['vm-both-thp-controller']['est_time_s']
        / by['vm-guest-thp']['est_time_s'], rel=1e-3)
