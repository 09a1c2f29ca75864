# SPDX-License-Identifier: Apache-2.0
"""tlbbwait.wait_until (tools/tlbbwait.py): the one bounded poll the tools and
tests share (real clock)."""

import time

import pytest

from tlbbwait import WaitTimeout, wait_until


def test_returns_the_first_true_answer():
    answers = iter([0, None, '', 'up'])
    assert wait_until('up', lambda: next(answers), 5, 0.01) == 'up'


def test_timeout_names_what_and_the_last_answer():
    t0 = time.monotonic()
    with pytest.raises(WaitTimeout) as e:
        wait_until('the pid file exists', lambda: [], 0.2, 0.05)
    took = time.monotonic() - t0
    assert 0.2 <= took < 2
    assert str(e.value) == ('timed out after 0.2 s waiting until the pid '
                            'file exists (last answer: [])')
    assert isinstance(e.value, TimeoutError)


def test_probe_runs_once_even_with_no_time():
    calls = []
    assert wait_until('x', lambda: calls.append(1) or 'y', 0) == 'y'
    assert calls == [1]


def test_retry_on_errors_are_reported_others_propagate():
    def refused():
        raise ConnectionRefusedError('no listener')
    with pytest.raises(WaitTimeout, match=r'last error: '
                       r'ConnectionRefusedError: no listener'):
        wait_until('the socket answers', refused, 0.1, 0.02,
                   retry_on=OSError)
    with pytest.raises(ConnectionRefusedError):
        wait_until('the socket answers', refused, 5, 0.02)


def test_on_wait_can_end_the_wait_and_error_type_is_the_callers():
    def died():
        raise RuntimeError('daemon died')
    with pytest.raises(RuntimeError, match='daemon died'):
        wait_until('daemon ready', lambda: False, 5, 0.01, on_wait=died)
    with pytest.raises(AssertionError, match='waiting until ready'):
        wait_until('ready', lambda: False, 0.05, 0.01, error=AssertionError)


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="wait_until\\('x'\\)"):
        wait_until('x', lambda: True, 1, 0)
