# SPDX-License-Identifier: Apache-2.0
"""kernel-module/tests/check-log.py: a KTAP skip is counted and listed with
its reason, never added to the passes (the in-guest tests print
"ok N what # SKIP why" for a missing capability: no PMU, no /dev/kvm)."""

import os
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
CHECK = os.path.join(TOP, 'kernel-module', 'tests', 'check-log.py')

LOG = """\
[    3.900000] Run /init as init process
TLBB-TEST-BEGIN t_caps
KTAP version 1
ok 1 register a VM
ok 2 counting backend is a hardware PMU # SKIP unavailable: no PMU (-2)
ok 3 - TAP's dash is accepted # skip no /dev/kvm
not ok 4 a real failure
# 4 checks, 1 failed, 2 skipped
TLBB-TEST-END t_caps rc=1 ok=1 notok=1 secs=0 skip=2
TLBB-SUMMARY passed=1 failed=1 skipped=2
"""


def check(tmp_path, log, status):
    path = tmp_path / 'console.log'
    path.write_text(log)
    p = subprocess.run([sys.executable, CHECK, str(path), '6.1', str(status)],
                       stdout=subprocess.PIPE, universal_newlines=True)
    return p.returncode, p.stdout.splitlines()


def test_skips_are_counted_and_listed_not_passed(tmp_path):
    rc, out = check(tmp_path, LOG, 35)
    assert rc == 1
    # 1 test pass + 2 harness passes (summary, clean log); the not ok and
    # QEMU's status 35 fail.
    assert out[-1] == '6.1: 3 passed, 2 failed'
    assert 'ok - 6.1: guest summary (1, 1) matches the console count ' \
        '(1, 1)' in out
    assert '# 6.1: 2 skipped' in out
    assert '# 6.1: SKIP t_caps: counting backend is a hardware PMU: ' \
        'unavailable: no PMU (-2)' in out
    assert "# 6.1: SKIP t_caps: TAP's dash is accepted: no /dev/kvm" in out


def test_no_skips_says_zero(tmp_path):
    log = LOG.replace(' # SKIP unavailable: no PMU (-2)', '').replace(
        ' # skip no /dev/kvm', '').replace('not ok 4', 'ok 4').replace(
        'rc=1 ok=1 notok=1', 'rc=0 ok=4 notok=0').replace(
        'passed=1 failed=1', 'passed=4 failed=0')
    rc, out = check(tmp_path, log, 33)
    assert rc == 0, out
    assert out[-1] == '6.1: 7 passed, 0 failed'
    assert '# 6.1: 0 skipped' in out
