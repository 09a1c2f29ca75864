# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures of the tlbsim tests: the binary, built once."""

import pathlib
import subprocess

import pytest

from nova_tlbbalance.simulate import engine

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='session')
def tlbsim():
    """Path of a tlbsim binary built from this tree (make -C tlbsim)."""
    return engine.binary(build=True)


RECORD = REPO / 'tlbsim' / 'traces' / 'record.sh'


@pytest.fixture
def sort_trace(tmp_path):
    """GNU sort of 20 000 shuffled lines recorded with valgrind (record.sh,
    400 000 accesses): the finished process (its last stdout line is
    record.sh's JSON summary) and the trace's path.
    """
    accesses = 400000
    data = tmp_path / 'in.txt'
    data.write_text(''.join('%08x\n' % ((i * 2654435761) % 2 ** 32)
                            for i in range(20000)))
    out = tmp_path / 'sort.trc.gz'
    proc = subprocess.run(
        [str(RECORD), '-n', str(accesses), str(out), '--', '/usr/bin/sort',
         str(data)], capture_output=True, text=True, timeout=600,
        env={'PATH': '/usr/bin:/bin', 'LC_ALL': 'C'})
    return proc, out
