# SPDX-License-Identifier: Apache-2.0
"""One real libvirtd for the whole integration session (root, this host).

It runs in a private mount namespace (tools/libvirthost.py): its hook is
installed in the namespace's own /etc/libvirt, so an installed host hook
and a libvirtd already running on the host are left alone. The CLI runs
inside the namespace too, as an operator on that host would run it.
"""

import json
import os
import subprocess
import sys

import jsonschema
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
with open(os.path.join(REPO, 'docs', 'schemas',
                       'vm-report.schema.json')) as _f:
    STATUS_SCHEMA = json.load(_f)
sys.path.insert(0, os.path.join(REPO, 'tools'))

import libvirthost  # noqa: E402
from tlbbwait import WaitTimeout, wait_until  # noqa: E402

HOOK_TIMEOUT = 5.0
HUGEPAGES = 80          # 2 MiB pages added to the host pool for the session
_SESSION = {}


def new_host(work, **kw):
    """A LibvirtHost with the session's capability cache."""
    kw.setdefault('cache_dir', libvirthost.CAPS_CACHE)
    return libvirthost.LibvirtHost(str(work), **kw)


@pytest.fixture(scope='session')
def host(tmp_path_factory):
    work = str(tmp_path_factory.mktemp('libvirt'))
    log = os.path.join(work, 'hook.jsonl')
    h = new_host(
        work, hook=True, hugepages=HUGEPAGES,
        hook_settings={'log_file': log, 'timeout': HOOK_TIMEOUT,
                       'syslog': '', 'state_dir': os.path.join(work, 'st')})
    h.hook_log = log
    with h:
        print('\nlibvirtd ready in %.1f s (private mount namespace, hook '
              'installed at %s)' % (h.start_seconds, h.hook_path))
        _SESSION['host'] = h
        yield h
        _SESSION.clear()


def cli_argv(*args):
    """argv of the real ``tlbbalance`` CLI inside the session's
    namespace."""
    return _SESSION['host'].ns_prefix() + [
        sys.executable, '-m', 'nova_tlbbalance'] + list(args)


def hook_records(host, domain):
    try:
        with open(host.hook_log) as f:
            recs = [json.loads(ln) for ln in f if ln.strip()]
    except FileNotFoundError:
        return []
    return [r for r in recs if r['domain'] == domain]


def wait_hook(host, domain, phase, timeout=10):
    def logged():
        recs = [r for r in hook_records(host, domain) if r['phase'] == phase]
        return recs[-1] if recs else None
    try:
        return wait_until('the hook logged phase %s for %s' % (phase, domain),
                          logged, timeout, 0.1)
    except WaitTimeout as e:
        raise AssertionError('%s; log: %s' % (e, hook_records(host, domain)))


def cli(*args, check=None):
    """Run the real ``tlbbalance`` CLI; (rc, stdout, stderr)."""
    p = subprocess.run(cli_argv(*args), capture_output=True, text=True,
                       timeout=120)
    if check is not None and p.returncode != check:
        raise AssertionError('tlbbalance %s: rc %d, expected %d\n%s\n%s'
                             % (' '.join(args), p.returncode, check,
                                p.stdout, p.stderr))
    return p.returncode, p.stdout, p.stderr


def status_of(name):
    """(host, vm) of ``tlbbalance status --json``, after checking the
    whole document against docs/schemas/vm-report.schema.json."""
    _, out, _ = cli('status', '--json', check=0)
    data = json.loads(out)
    jsonschema.validate(data, STATUS_SCHEMA,
                        cls=jsonschema.Draft202012Validator)
    for vm in data['vms']:
        if vm['name'] == name:
            return data['host'], vm
    raise AssertionError('%s not in tlbbalance status: %s'
                         % (name, [v['name'] for v in data['vms']]))
