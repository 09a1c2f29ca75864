# SPDX-License-Identifier: Apache-2.0
"""Recording a real program with valgrind's lackey, replaying the trace.

tlbsim/traces/record.sh runs the program under valgrind (installed from
tools/ci/system-packages.txt), converts lackey's text to tlbsim's trace
format on the fly and stops after the requested number of accesses; the
trace then runs through the simulator like any workload.
"""

import json
import subprocess

from nova_tlbbalance.simulate import engine


def test_record_and_replay_a_real_program(tlbsim, sort_trace):
    proc, out = sort_trace
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info['accesses'] == 400000
    # lackey saw sort's own work, not just the dynamic loader
    assert out.stat().st_size > 20000

    res = engine.run(engine.Config('native', model='native'),
                     workload='trace:%s' % out, tlbsim=tlbsim,
                     machine='intel')
    assert res['accesses'] == 400000       # one pass by default
    assert res['refills_small'] + res['refills_huge'] > 0
    # replay loops the trace when more accesses are asked for
    res2 = engine.run(engine.Config('native', model='native'),
                      workload='trace:%s' % out, tlbsim=tlbsim,
                      machine='intel', accesses=1000000)
    assert res2['accesses'] == 1000000


def test_trace_regions_counts_accesses_per_region(tlbsim, tmp_path):
    # four loads: two on one page, one on the next page, one 64 MiB
    # higher (another 32 MiB region); a store far below
    log = ('==1== Lackey\n L 04000010,8\n L 04000018,8\n L 04001000,4\n'
           ' L 08000000,8\n S 00401000,8\n')
    out = tmp_path / 'small.trc'
    with open(out, 'wb') as f:
        subprocess.run([str(tlbsim), 'lackey2trace'], input=log.encode(),
                       stdout=f, stderr=subprocess.DEVNULL, check=True)
    lines = subprocess.run(
        [str(tlbsim), 'trace-regions', str(out)], capture_output=True,
        text=True, check=True).stdout.splitlines()
    assert lines == ['0x0 4 1', '0x4000000 0 3', '0x8000000 3 1',
                     'accesses 5 regions 3 pages 4']
    # regions of 2 MiB: the same three here
    lines = subprocess.run(
        [str(tlbsim), 'trace-regions', '--shift', '21', str(out)],
        capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines[-1] == 'accesses 5 regions 3 pages 4'
    # regions smaller than the trace's pages are refused, by name
    proc = subprocess.run(
        [str(tlbsim), 'trace-regions', '--shift', '10', str(out)],
        capture_output=True, text=True)
    assert proc.returncode == 2 and 'larger than' in proc.stderr
