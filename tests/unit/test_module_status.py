# SPDX-License-Identifier: Apache-2.0
"""The module's ``status`` attribute, typed once (module_status.parse).

The text is the module's own format: the header lines its configfs
``status`` show prints (read from kernel-module/tlbb_configfs.c, so a
header line the kernel adds and this reader does not know fails here),
then every statistic of tlbb_stats.def and tunable of tlbb_params.def.
The real module's output is typed by the same reader in the e2e suite
(``tlbbalance status --json`` in the node).
"""

import os
import re

import pytest

from nova_tlbbalance import module_defs
from nova_tlbbalance import module_status

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

SAMPLE = {'u64': '42', 'milli': '109.020', 'str': 'lowering',
          'cpulist': '0-3,8'}


def kernel_header():
    """The header keys tlbb_vm_status_show prints, in order."""
    with open(os.path.join(REPO, 'kernel-module', 'tlbb_configfs.c')) as f:
        src = f.read()
    body = src[src.index('tlbb_vm_status_show('):]
    fmt = re.search(r'sysfs_emit_at\(page, n,\s*"([^"]*)"', body).group(1)
    return [line.split(' ')[0] for line in fmt.split('\\n') if line]


def module_text():
    lines = ['mode balance', 'pid 4242', 'inject_enabled 0',
             'limiter_error -14', 'limiter_stuck 3', 'staging 0']
    lines += ['%s %s' % (s.name, SAMPLE[s.kind])
              for s in module_defs.stats()]
    lines += ['%s %d' % (p.name, p.default) for p in module_defs.params()]
    return '\n'.join(lines) + '\n'


def test_the_header_is_what_the_kernel_prints():
    assert kernel_header() == list(module_status.HEADER)


def test_every_key_gets_its_type():
    st = module_status.parse(module_text())
    assert st.problems == []
    assert (st.pid, st.mode) == (4242, 'balance')
    assert st['limiter_error'] == -14 and st['limiter_stuck'] == 3
    for stat in module_defs.stats():
        want = {'u64': 42, 'milli': 109.02, 'str': 'lowering',
                'cpulist': '0-3,8'}[stat.kind]
        assert st[stat.name] == want, stat
        assert type(st[stat.name]) is type(want), stat
    for param in module_defs.params():
        assert st[param.name] == param.default, param
        assert type(st[param.name]) is int, param
    assert module_status.cpu_count(st['cpus_allowed']) == 5


def test_a_newer_modules_key_is_kept_as_text():
    st = module_status.parse(module_text() + 'tlb_shootdowns 17\n')
    assert st['tlb_shootdowns'] == '17' and st.problems == []


@pytest.mark.parametrize('key,value,kind', [
    ('huge_pages', '-1', 'an unsigned integer'),
    ('huge_pages', '12abc', 'an unsigned integer'),
    ('load', 'fast', 'a number'),
    ('cpus_ran', '0-x', 'a CPU list'),
    ('pid', '', 'an integer'),
    ('imbalance_threshold', '2.5', 'an integer'),
])
def test_a_bad_value_is_named_and_left_out(key, value, kind):
    text = re.sub(r'(?m)^%s .*$' % key, '%s %s' % (key, value),
                  module_text())
    st = module_status.parse(text)
    assert key not in st
    assert st.problems == ['module status: %s %r is not %s'
                           % (key, value, kind)]
    assert st['state'] == 'lowering'      # the rest of the report stays
