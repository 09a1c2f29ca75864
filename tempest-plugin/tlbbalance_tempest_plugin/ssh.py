# SPDX-License-Identifier: Apache-2.0
"""One command on a compute host over SSH, the host's key checked.

paramiko only (tempest's own dependency); no tempest import, so the host
key handling is tested on its own against a real sshd
(tests/unit/test_tempest_ssh.py).

The host key is checked as OpenSSH's ``StrictHostKeyChecking yes`` does:
the known hosts are the system's (``/etc/ssh/ssh_known_hosts``), the
user's (``~/.ssh/known_hosts``) and an optional file of the operator's
(``[tlbbalance] ssh_known_hosts_file``); a host that is in none of them,
or whose key differs from the one recorded, is refused with
:class:`HostKeyRejected` naming the host, its address and the key it
offered. Nothing is ever added to a known hosts file.
"""

import os

import paramiko

SYSTEM_KNOWN_HOSTS = '/etc/ssh/ssh_known_hosts'
USER_KNOWN_HOSTS = '~/.ssh/known_hosts'


class HostKeyRejected(Exception):
    """The compute host's SSH key is unknown or not the recorded one."""


def known_hosts_files(extra=None):
    """The known hosts files consulted, in order (those that exist)."""
    out = [SYSTEM_KNOWN_HOSTS, os.path.expanduser(USER_KNOWN_HOSTS)]
    if extra:
        out.append(os.path.abspath(os.path.expanduser(extra)))
    return [p for p in out if os.path.isfile(p)]


def _fingerprint(key):
    return '%s %s' % (key.get_name(), key.fingerprint)


def client(name, addr, port, known_hosts=None):
    """A paramiko client for compute host ``name`` at ``addr``:``port``
    that refuses any host key but the known one. ``known_hosts``: the
    operator's extra file (must exist when given)."""
    if known_hosts and not os.path.isfile(os.path.expanduser(known_hosts)):
        raise HostKeyRejected(
            'ssh_known_hosts_file %s does not exist (compute host %s)'
            % (known_hosts, name))
    c = paramiko.SSHClient()
    for path in known_hosts_files(known_hosts):
        # loaded as "system" keys: read-only, never saved back
        c.load_system_host_keys(path)
    c.set_missing_host_key_policy(paramiko.RejectPolicy())
    return c


def connect(name, addr, port, user, key_file=None, known_hosts=None,
            timeout=120):
    """A connected client (close it), or HostKeyRejected."""
    c = client(name, addr, port, known_hosts)
    where = addr if port == 22 else '[%s]:%d' % (addr, port)
    files = ', '.join(known_hosts_files(known_hosts)) or 'none found'
    try:
        c.connect(addr, port=port, username=user, key_filename=key_file,
                  timeout=timeout, look_for_keys=key_file is None,
                  allow_agent=key_file is None)
    except paramiko.BadHostKeyException as exc:
        c.close()
        raise HostKeyRejected(
            'compute host %s (%s): its SSH host key %s is NOT the one '
            'recorded for it (%s) in the known hosts (%s): refused, '
            'possibly an impostor' % (name, where, _fingerprint(exc.key),
                                      _fingerprint(exc.expected_key),
                                      files)) from None
    except paramiko.SSHException as exc:
        c.close()
        if 'not found in known_hosts' not in str(exc):
            raise
        raise HostKeyRejected(
            'compute host %s (%s) is not in the known hosts (%s): its '
            'host key cannot be checked, refused. Record it first (e.g. '
            'ssh-keyscan -p %d %s, fingerprint checked out of band) in '
            '~/.ssh/known_hosts or the file [tlbbalance] '
            'ssh_known_hosts_file names' % (name, where, files, port,
                                            addr)) from None
    except BaseException:
        c.close()
        raise
    return c


def run(name, addr, port, user, command, key_file=None, known_hosts=None,
        timeout=120, stdin=None):
    """(exit status, stdout, stderr) of the shell command line
    ``command`` on the host; ``stdin``: text sent to it."""
    c = connect(name, addr, port, user, key_file, known_hosts, timeout)
    try:
        i, out, err = c.exec_command(command, timeout=timeout)
        if stdin is not None:
            i.write(stdin)
        i.channel.shutdown_write()
        stdout = out.read().decode(errors='replace')
        stderr = err.read().decode(errors='replace')
        return out.channel.recv_exit_status(), stdout, stderr
    finally:
        c.close()
