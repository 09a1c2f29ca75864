# SPDX-License-Identifier: Apache-2.0
"""How a test reaches a compute host: one small interface, two backends
(:mod:`tlbbalance_tempest_plugin.access`), built from tempest.conf here.

``HostAccess.run(argv)`` runs a command as root on the compute host and
returns ``(rc, stdout, stderr)``; everything else is built on it, with the
operator's own tools: ``virsh`` for the live domain XML and ``tlbbalance
status/verify --json`` for what the host gives each VM (the same commands
an operator types, so a test asserts what an operator would see).

- ``SSHHost``: an operator's real cloud; SSH to the compute host
  (paramiko, tempest's own dependency), the host key checked against the
  known hosts, ``sudo -n`` for what needs root when the user is not root
  (the sudo rule of docs/tempest.md).
- ``LocalHost``: the cloud in a box (tools/cloud): each compute host is a
  private mount/UTS namespace on this machine, entered with ``nsenter``.
"""

import json
import shlex

from oslo_log import log as logging
from tempest import config
from tempest.lib.common.utils import test_utils
from tlbbalance_tempest_plugin.access import HostAccess  # noqa: F401
from tlbbalance_tempest_plugin.access import HostCommandFailed  # noqa: F401
from tlbbalance_tempest_plugin.access import LocalHost
from tlbbalance_tempest_plugin.access import SSHAccess
from tlbbalance_tempest_plugin.ssh import HostKeyRejected  # noqa: F401

CONF = config.CONF
LOG = logging.getLogger(__name__)


class SSHHost(SSHAccess):
    """SSHAccess with tempest.conf's ``[tlbbalance]`` ssh_* options."""

    def __init__(self, name):
        c = CONF.tlbbalance
        super().__init__(
            name, c.ssh_hosts.get(name, name), c.ssh_user, port=c.ssh_port,
            key_file=c.ssh_key_file, known_hosts=c.ssh_known_hosts_file,
            sudo=c.ssh_sudo, uri=c.libvirt_uri, cli=shlex.split(c.cli),
            hugetlbfs_mount=c.hugetlbfs_mount)


_FACTS = {}


def _facts():
    path = CONF.tlbbalance.local_cloud_facts
    if path not in _FACTS:
        with open(path) as f:
            _FACTS[path] = json.load(f)
    return _FACTS[path]


def for_host(name):
    """The HostAccess of compute host ``name`` (nova's service host)."""
    if CONF.tlbbalance.host_access == 'local':
        for h in _facts()['hosts']:
            if h['name'] == name:
                return LocalHost(_facts(), h)
        raise KeyError('compute host %r is not in %s' % (
            name, CONF.tlbbalance.local_cloud_facts))
    return SSHHost(name)


def wait_until(what, probe, timeout, interval=1.0):
    """Poll probe() until it returns a true value; that value. On timeout
    an AssertionError (a test failure) says what was waited for and the
    last value.  The polling is tempest's own call_until_true (this
    plugin is a distribution of its own; the repository's tools and tests
    share tools/tlbbwait.py, which it does not ship)."""
    got = []

    def kept():
        got[:] = [probe()]
        return got[0]

    if not test_utils.call_until_true(kept, timeout, interval):
        raise AssertionError('timed out after %g s waiting until %s '
                             '(last answer: %r)'
                             % (timeout, what, got[0] if got else None))
    return got[0]
