# SPDX-License-Identifier: Apache-2.0
"""What every hook phase shares: settings, log, the hard timer."""

import signal
import time

from nova_tlbbalance.hook.config import Config
from nova_tlbbalance.hook.config import ConfigError
from nova_tlbbalance.hook.log import Log


class Failure(Exception):
    """Something the policy asked for is not met."""


class HookTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise HookTimeout()


def setup(conf=None):
    """(settings, log) for a phase; conf: the hook.conf the installed hook
    names. A bad setting is logged and the defaults are used: a typo in
    the file never breaks a VM's lifecycle."""
    try:
        config = Config.load(conf)
    except ConfigError as exc:
        config = Config()
        Log(config)('err', 'bad hook setting, using defaults: %s' % exc)
    return config, Log(config)


def ms(t0):
    return round((time.monotonic() - t0) * 1000, 2)


def bounded(timeout, func, *args):
    """Run func(*args) under a hard SIGALRM timer.

    Returns (result text, failed). Any exception is caught: a failure of
    this extension never breaks a VM's lifecycle by itself; the caller
    decides (strict policy) whether a failure refuses the VM.
    """
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return (func(*args) or 'ok'), False
    except HookTimeout:
        return 'timeout: phase took more than %.1f s' % timeout, True
    except Failure as exc:
        return 'failed: %s' % exc, True
    except Exception as exc:
        return 'error: %s: %s' % (type(exc).__name__, exc), True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
