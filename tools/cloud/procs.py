# SPDX-License-Identifier: Apache-2.0
"""Processes the cloud starts, each recorded by pid the moment it exists.

Every daemon is started in its own session (process group), its pid and
kernel start time written to ``state.json`` at once, so ``cloud.py down``
(or the ``up`` that failed half way) can stop exactly what this cloud
started, and nothing else: a pid is only signalled while its start time
still matches (pids are reused).
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

# Every cloud module imports this one: nova_tlbbalance (its wait_until)
# from this checkout.
sys.path.insert(0, os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))    # tools/

import _repo  # noqa: E402,F401  (the checkout on sys.path)
from tlbbwait import wait_until, WaitTimeout  # noqa: E402


class CloudError(Exception):
    """A step of the cloud failed; the message names the step and log."""


def _start_time(pid):
    """The process's start time in clock ticks, or None if it is gone."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] == 'Z':
        return None
    return int(fields[19])


def alive(rec):
    return _start_time(rec['pid']) == rec['start']


class State:
    """``<dir>/state.json``: what this cloud started and how to undo it."""

    def __init__(self, path):
        self.path = path
        self.data = {'procs': [], 'hosts': []}
        if os.path.exists(path):
            with open(path) as f:
                self.data = json.load(f)

    def save(self):
        tmp = self.path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    def __getitem__(self, key):
        return self.data[key]

    def __setitem__(self, key, value):
        self.data[key] = value
        self.save()

    def get(self, key, default=None):
        return self.data.get(key, default)

    @property
    def procs(self):
        return self.data['procs']

    def proc(self, name):
        for rec in self.procs:
            if rec['name'] == name:
                return rec
        raise KeyError(name)


def spawn(state, name, argv, log_path, env=None, cwd=None, grace=15):
    """Start a daemon in its own session; record it before returning."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    logf = open(log_path, 'ab')
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf,
                             stderr=subprocess.STDOUT, env=full_env,
                             cwd=cwd, start_new_session=True)
    except OSError as exc:
        raise CloudError('%s: cannot start %s: %s' % (name, argv[0], exc))
    finally:
        logf.close()
    rec = {'name': name, 'pid': p.pid, 'start': _start_time(p.pid),
           'log': log_path, 'argv': argv, 'grace': grace}
    state.procs.append(rec)
    state.save()
    return rec


def check_alive(state, name):
    rec = state.proc(name)
    if not alive(rec):
        raise CloudError('%s (pid %d) died; its log: %s\n%s'
                         % (name, rec['pid'], rec['log'],
                            tail(rec['log'])))
    return rec


def tail(path, lines=25):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:])
    except OSError:
        return '(no log)'


def _signal_group(rec, sig):
    if not alive(rec):
        return
    with contextlib.suppress(OSError):
        os.killpg(rec['pid'], sig)
    with contextlib.suppress(OSError):
        os.kill(rec['pid'], sig)


def stop(rec, grace=15.0):
    """SIGTERM the process (and its group), SIGKILL after ``grace`` s."""
    _signal_group(rec, signal.SIGTERM)
    if _gone_within(rec, grace):
        return True
    _signal_group(rec, signal.SIGKILL)
    return _gone_within(rec, 10)


def _gone_within(rec, timeout):
    """True once the process is gone, False if it outlived timeout s."""
    try:
        return wait_until('pid %s gone' % rec['pid'],
                          lambda: not alive(rec), timeout, 0.1)
    except WaitTimeout:
        return False


def stop_all(state, grace=15.0, log=print):
    """Stop every recorded process, newest first; True if all are gone."""
    ok = True
    for rec in reversed(state.procs):
        if not alive(rec):
            continue
        log('stopping %s (pid %d)' % (rec['name'], rec['pid']))
        if not stop(rec, rec.get('grace', grace)):
            log('  %s (pid %d) survived SIGKILL'
                % (rec['name'], rec['pid']))
            ok = False
    return ok


def run(argv, what, log_path=None, env=None, timeout=600, input=None,
        check=True):
    """Run a short command to completion; its output goes to log_path."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True,
                           env=full_env, timeout=timeout, input=input)
    except subprocess.TimeoutExpired:
        raise CloudError('%s: still running after %d s: %s'
                         % (what, timeout, ' '.join(argv))) from None
    if log_path:
        with open(log_path, 'a') as f:
            f.write('$ %s\n%s%s(rc %d, %.1f s)\n'
                    % (' '.join(argv), p.stdout, p.stderr, p.returncode,
                       time.monotonic() - t0))
    if check and p.returncode:
        raise CloudError('%s failed (rc %d): %s\n%s%s'
                         % (what, p.returncode, ' '.join(argv),
                            p.stdout[-2000:], p.stderr[-3000:]))
    return p


def wait_for(what, probe, timeout, interval=0.25, on_wait=None):
    """Poll ``probe()`` until it returns a true value; that value.

    ``on_wait()`` runs between polls (e.g. to check the daemon the wait
    is for is still alive, so a dead one fails at once, not at timeout).
    A probe's exception counts as "not yet"; a timeout is a CloudError
    naming what and the last error (tlbbwait.wait_until).
    """
    return wait_until(what, probe, timeout, interval, retry_on=Exception,
                      on_wait=on_wait, error=CloudError)
