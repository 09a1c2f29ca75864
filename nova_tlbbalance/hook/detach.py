# SPDX-License-Identifier: Apache-2.0
"""Run a start-up phase in the background (the ``background`` setting).

libvirt waits for every hook process before it goes on with the domain's
start: ``prepare`` and ``started`` of a tagged domain are on the critical
path of every ``virsh start``. With ``background = true`` the hook forks
once it has read the XML, the parent exits 0 at once and the child, in a
session of its own with stdio on /dev/null (its messages go to syslog and
the JSON log), does the phase's work.

Only for a domain whose policy cannot be strict (:func:`surely_not_strict`):
a strict domain must be refused before it runs, so its phases stay in the
foreground. ``stopped``/``release`` wait for a pending background phase of
the same domain (:func:`wait_pending`, an flock the child holds until it
has finished), so a quick destroy never races a registration.
"""

import os
import zlib

from nova_tlbbalance.hook import strictness
from nova_tlbbalance.hook.config import Config
from nova_tlbbalance.hook.config import ConfigError


def surely_not_strict(data):
    """True when the policy element's strict attribute is absent or
    reads as false (hook.strictness: the element, not a substring of
    the whole XML, where a tenant's server name could say strict="true").
    Unknown (a spelling that is neither, XML that does not parse) is not
    "surely not": that phase stays in the foreground."""
    return strictness.declared(data) is False


def lock_path(state_dir, name):
    """The per-domain lock file (a name hash: names may be long; two
    names sharing one only serialise their phases)."""
    return os.path.join(state_dir, 'pending-%08x' % zlib.crc32(
        name.encode('utf-8', 'surrogateescape')))


def _lock(path):
    import fcntl
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)     # a previous child of this domain
    return fd


def to_background(name, op, data, conf=None):
    """Fork when the settings and the policy allow it: 'parent' (return
    to libvirt at once), 'child' (do the phase), None when the phase runs
    in the foreground (nothing forked). Only
    ``started`` (which registers) holds the domain's lock: ``prepare``
    only checks, so nothing waits for it."""
    try:
        config = Config.load(conf)
    except ConfigError:
        return None             # phases.run logs it, in the foreground
    if not config.background or not surely_not_strict(data):
        return None
    try:
        fd = None
        if op == 'started':
            os.makedirs(config.state_dir, exist_ok=True)
            fd = _lock(lock_path(config.state_dir, name))
        pid = os.fork()
    except OSError:
        return None             # cannot detach: do it now
    if pid:
        if fd is not None:
            os.close(fd)        # the child's copy keeps the lock
        return 'parent'
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(null, std)
    os.close(null)
    return 'child'


def wait_pending(state_dir, name):
    """Wait for a background phase of this domain to finish (callers run
    under the phase timer), then drop the lock file."""
    path = lock_path(state_dir, name)
    if not os.path.exists(path):
        return
    fd = _lock(path)
    try:
        os.unlink(path)
    except OSError:
        pass
    os.close(fd)
