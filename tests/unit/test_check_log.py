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


# A debug kernel's (tools/kernels/build-debug.sh) boot messages of its
# checkers, and a clean run on it.
DEBUG_BOOT = """\
[    0.000000] kasan: KernelAddressSanitizer initialized (generic)
[    0.010000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc.
[    0.020000] kfence: initialized - using 2097152 bytes for 255 objects
"""
CLEAN = LOG.replace(' # SKIP unavailable: no PMU (-2)', '').replace(
    ' # skip no /dev/kvm', '').replace('not ok 4', 'ok 4').replace(
    'rc=1 ok=1 notok=1', 'rc=0 ok=4 notok=0').replace(
    'passed=1 failed=1', 'passed=4 failed=0')


def check_as(tmp_path, log, label, status=33):
    path = tmp_path / 'console.log'
    path.write_text(log)
    p = subprocess.run([sys.executable, CHECK, str(path), label,
                        str(status)],
                       stdout=subprocess.PIPE, universal_newlines=True)
    return p.returncode, p.stdout.splitlines()


def test_debug_line_passes_with_checkers_on(tmp_path):
    rc, out = check_as(tmp_path, DEBUG_BOOT + CLEAN, '6.12-debug')
    assert rc == 0, out
    assert 'ok - 6.12-debug: debug checkers on (KASAN, lockdep, KFENCE)' \
        in out
    assert '# 6.12-debug: checker reports: KASAN 0, KFENCE 0, lockdep 0, ' \
        'DEBUG_VM 0, atomic-sleep 0, preempt 0' in out


def test_debug_line_fails_when_a_checker_is_off(tmp_path):
    # A kernel built without lockdep would report 0 lockdep reports.
    boot = DEBUG_BOOT.replace('Lock dependency validator', 'nothing')
    rc, out = check_as(tmp_path, boot + CLEAN, '6.12-debug')
    assert rc == 1
    assert 'not ok - 6.12-debug: debug checkers on (KASAN, lockdep, ' \
        'KFENCE): no boot message of lockdep' in out


# Report headers as the 6.12 checkers print them; the dmesg dump at the
# end repeats each one, which must not count twice.
REPORTS = """\
[   20.000001] BUG: KASAN: slab-use-after-free in tlbb_vm_put+0x1/0x2
[   21.000001] WARNING: possible circular locking dependency detected
[   22.000001] BUG: sleeping function called from invalid context at mm/gup.c:1
[   23.000001] page dumped because: VM_BUG_ON_FOLIO(!folio_test_lru(f))
[   24.000001] BUG: KFENCE: out-of-bounds read in tlbb_heat_read+0x1/0x2
[   25.000001] BUG: using smp_processor_id() in preemptible [00000000] code: t
"""


def test_debug_reports_counted_once_by_checker(tmp_path):
    log = DEBUG_BOOT + CLEAN.replace(
        'TLBB-SUMMARY', REPORTS + 'TLBB-SUMMARY') + \
        'TLBB-DMESG-BEGIN\n' + REPORTS + 'TLBB-DMESG-END\n'
    rc, out = check_as(tmp_path, log, '6.12-debug')
    assert rc == 1
    assert '# 6.12-debug: checker reports: KASAN 1, KFENCE 1, lockdep 1, ' \
        'DEBUG_VM 1, atomic-sleep 1, preempt 1' in out
    assert out[-1] == '6.12-debug: 7 passed, 1 failed'


def test_checker_lines_without_header_fail(tmp_path):
    # Lines that say a checker fired even when its BUG:/WARNING: header
    # was lost (ring buffer) or never printed at the console's level.
    for line in ('[   30.0] turning off the locking correctness validator.',
                 '[   30.0] page dumped because: VM_BUG_ON_PAGE(1)',
                 '[   30.0] INFO: trying to register non-static key.',
                 '[   30.0] BUG kmalloc-64 (Tainted: G O): KFENCE'):
        rc, out = check_as(tmp_path, CLEAN.replace(
            'TLBB-SUMMARY', line + '\nTLBB-SUMMARY'), '6.12')
        assert rc == 1, (line, out)
        assert 'not ok - 6.12: kernel log free of BUG/WARNING/Oops/KASAN/' \
            'panic/Call Trace (1 bad lines)' in out, line
