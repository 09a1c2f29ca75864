"""One real libvirtd for the whole integration session (root, this host)."""

import json
import os
import subprocess
import sys
import time

import pytest

from . import libvirt_host

HOOK_TIMEOUT = 5.0
HUGEPAGES = 80          # 2 MiB pages in the host pool during the session


@pytest.fixture(scope='session')
def host(tmp_path_factory):
    work = str(tmp_path_factory.mktemp('libvirt'))
    log = os.path.join(work, 'hook.jsonl')
    h = libvirt_host.LibvirtHost(
        work, hook=True, hugepages=HUGEPAGES,
        hook_settings={'log_file': log, 'timeout': HOOK_TIMEOUT,
                       'syslog': '', 'state_dir': os.path.join(work, 'st')})
    h.hook_log = log
    with h:
        print('\nlibvirtd ready in %.1f s (hook installed at %s)'
              % (h.start_seconds, libvirt_host.HOOK_DEST))
        yield h


def hook_records(host, domain):
    try:
        with open(host.hook_log) as f:
            recs = [json.loads(ln) for ln in f if ln.strip()]
    except FileNotFoundError:
        return []
    return [r for r in recs if r['domain'] == domain]


def wait_hook(host, domain, phase, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        recs = [r for r in hook_records(host, domain) if r['phase'] == phase]
        if recs:
            return recs[-1]
        time.sleep(0.1)
    raise AssertionError('hook never logged phase %s for %s; log: %s'
                         % (phase, domain, hook_records(host, domain)))


def cli(*args, check=None):
    """Run the real ``tlbbalance`` CLI; (rc, stdout, stderr)."""
    p = subprocess.run([sys.executable, '-m', 'nova_tlbbalance'] +
                       list(args), capture_output=True, text=True,
                       timeout=120)
    if check is not None and p.returncode != check:
        raise AssertionError('tlbbalance %s: rc %d, expected %d\n%s\n%s'
                             % (' '.join(args), p.returncode, check,
                                p.stdout, p.stderr))
    return p.returncode, p.stdout, p.stderr


def status_of(name):
    _, out, _ = cli('status', '--json', check=0)
    data = json.loads(out)
    for vm in data['vms']:
        if vm['name'] == name:
            return data['host'], vm
    raise AssertionError('%s not in tlbbalance status: %s'
                         % (name, [v['name'] for v in data['vms']]))
