# SPDX-License-Identifier: Apache-2.0
"""One bounded poll: ``wait_until(what, probe, timeout, interval)``.

Used by the tools (tools/cloud, tools/node, tools/libvirthost.py) and
the tests; not shipped: operators' compute hosts never poll with it, so it
lives beside the tools rather than in nova_tlbbalance.  Importable as
``tlbbwait`` with tools/ on sys.path: every tool puts it there
(tools/_repo.py), tests/conftest.py does for the tests, tools/node/vport.py
inside the node.  The tempest plugin, a distribution of its own
(tempest-plugin/), polls with tempest's own ``call_until_true``.  The
standard library only: tools/node runs it under any python3.
"""

import time


class WaitTimeout(TimeoutError):
    """What was waited for did not come within the bound; the message says
    what, how long and the probe's last answer or error."""


def wait_until(what, probe, timeout, interval=0.25, retry_on=(),
               on_wait=None, error=WaitTimeout):
    """Call ``probe()`` until it returns a true value, and return that.

    ``what`` names the awaited state for the error ("libvirtd answers").
    ``probe`` runs at least once, then every ``interval`` seconds until
    ``timeout`` seconds have passed; an exception of a type in
    ``retry_on`` counts as "not yet" (and is reported on timeout), any
    other propagates.  ``on_wait()`` runs between polls: e.g. raise at
    once when the daemon waited for has died.  On timeout raises
    ``error`` (WaitTimeout, or e.g. AssertionError in a test) with a
    message naming ``what``, the bound and the last answer.
    """
    if timeout < 0 or interval <= 0:
        raise ValueError('wait_until(%r): timeout %r and interval %r must '
                         'be >= 0 and > 0' % (what, timeout, interval))
    end = time.monotonic() + timeout
    last = None
    while True:
        try:
            got = probe()
            if got:
                return got
            last = 'last answer: %r' % (got,)
        except retry_on as exc:
            last = 'last error: %s: %s' % (type(exc).__name__, exc)
        left = end - time.monotonic()
        if left <= 0:
            raise error('timed out after %g s waiting until %s (%s)'
                        % (timeout, what, last))
        if on_wait is not None:
            on_wait()
        time.sleep(min(interval, left))
