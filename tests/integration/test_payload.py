# SPDX-License-Identifier: Apache-2.0
"""The node tests' guest payload (tools/payload) under QEMU TCG on this
host: a CPU exception is reported on its serial line as a
``tlbb-payload: error`` line (which tools/node/scenario.wait_payload turns
into an immediate failure) instead of a jump through the multiboot
loader's real-mode table. Before the payload had its own exception
table, a lazily faulted guest in the node was seen running off into
zeroed RAM in 1 of 62 starts with nothing on its console to say why
(docs/node.md)."""

import os
import re
import subprocess

import pytest

from tlbbwait import wait_until

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# a boot and a few MiB touched under TCG take well under a second quiet;
# the bound leaves room for a machine at load 8+
BOOT_S = 60


@pytest.fixture(scope='module')
def payload(tmp_path_factory):
    out = tmp_path_factory.mktemp('payload')
    subprocess.run(['make', '-s', '-C', os.path.join(REPO, 'tools',
                                                     'payload'),
                    'O=%s' % out], check=True)
    return str(out / 'tlbb-payload.elf')


def boot(payload, tmp_path, cmdline, want):
    """Boot the payload with ``cmdline`` until its serial log matches
    ``want``; returns the log. QEMU is stopped either way."""
    log = tmp_path / 'serial.log'
    qemu = subprocess.Popen(
        ['qemu-system-x86_64', '-accel', 'tcg', '-m', '64', '-display',
         'none', '-no-reboot', '-monitor', 'none', '-kernel', payload,
         '-append', cmdline, '-serial', 'file:%s' % log],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def seen():
            if qemu.poll() is not None:
                raise AssertionError('QEMU exited (rc %s): %s' % (
                    qemu.returncode, qemu.stderr.read()))
            text = log.read_text(errors='replace') if log.exists() else ''
            return text if re.search(want, text) else None
        return wait_until('the payload printed %r' % want, seen, BOOT_S,
                          0.1, error=AssertionError)
    finally:
        qemu.kill()
        qemu.wait()


def test_exception_is_reported_with_vector_and_eip(payload, tmp_path):
    text = boot(payload, tmp_path, 'pattern=once pause_ms=0 fault=ud',
                r'tlbb-payload: error: exception .*\n')
    m = re.search(r'tlbb-payload: error: exception vector=(\d+) '
                  r'error_code=0x([0-9a-f]+) eip=0x([0-9a-f]+)', text)
    assert m, text
    assert int(m.group(1)) == 6, text          # #UD
    # the eip is the payload's own code (loaded at 1 MiB)
    nm = subprocess.run(['nm', payload], capture_output=True, text=True,
                        check=True).stdout
    main = int(re.search(r'^([0-9a-f]+) T payload_main$', nm, re.M)
               .group(1), 16)
    assert main <= int(m.group(3), 16) < main + 0x1000, (text, nm)
    assert 'touched' not in text


def test_without_a_fault_it_touches_its_ram(payload, tmp_path):
    text = boot(payload, tmp_path, 'pattern=once pause_ms=0 size_mb=8',
                r'tlbb-payload: touched pages=2048\n')
    assert 'error' not in text
