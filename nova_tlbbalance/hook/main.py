# SPDX-License-Identifier: Apache-2.0
"""Entry point of the libvirt qemu hook.

libvirt runs ``/etc/libvirt/hooks/qemu.d/tlbbalance NAME OP SUBOP EXTRA``
with the domain XML on stdin. ``migrate`` and ``restore`` must print the
(possibly changed) XML: it is passed through unchanged. Every other phase
prints nothing. A domain whose XML lacks the tlbbalance namespace is left
alone after one substring search, before anything else is imported; so is
the ``start`` phase (nothing to do between prepare and started), and
``prepare`` of a domain whose policy cannot be strict and asks for THP
backing (:func:`strictness.prepare_can_wait`: its check is made in
``started``; an interpreter's imports fewer on the boot's path).

With the ``background`` setting, ``prepare`` and ``started`` of a domain
whose policy cannot be strict run in a detached child (:mod:`.detach`):
libvirt goes on at once; ``stopped``/``release`` wait for that child.
"""

import sys
import time

from nova_tlbbalance.hook import strictness

NS = b'http://openstack.org/xmlns/tlbbalance/1.0'
PASS_THROUGH = ('migrate', 'restore')
STARTUP = ('prepare', 'started', 'reconnect')     # hook.phases
TEARDOWN = ('stopped', 'release')                  # hook.teardown
BACKGROUND = ('prepare', 'started')


def main(argv=None, stdin=None, stdout=None, conf=None):
    """conf: the hook.conf to read (the installed hook names it; None:
    /etc/tlbbalance/hook.conf)."""
    t0 = time.monotonic()
    argv = sys.argv[1:] if argv is None else argv
    stdin = sys.stdin.buffer if stdin is None else stdin
    stdout = sys.stdout.buffer if stdout is None else stdout
    if len(argv) < 3:
        sys.stderr.write('tlbbalance hook: usage: NAME OP SUBOP [EXTRA] '
                         '(run by libvirtd), got %r\n' % (argv,))
        return 2
    name, op, sub = argv[:3]
    data = stdin.read()
    if op in PASS_THROUGH:
        stdout.write(data)
        stdout.flush()
        return 0
    if NS not in data:
        return 0
    try:
        if op == 'prepare' and strictness.prepare_can_wait(data):
            return 0
        return _dispatch(name, op, sub, data, t0, conf)
    except Exception as exc:
        # A broken installation (a module that no longer imports, a bug
        # before a phase's own guard): never take every VM down with it.
        # Only a tagged domain whose policy element asks for strict mode
        # is refused (hook.strictness: the element, not a substring).
        refuse = op in ('prepare', 'started') and \
            strictness.declared(data) is True
        sys.stderr.write('tlbbalance hook: internal error in %s %s (%s: '
                         '%s); %s\n'
                         % (op, sub, type(exc).__name__, exc,
                            'strict policy: domain refused' if refuse
                            else 'domain left unmanaged'))
        return 1 if refuse else 0


def _dispatch(name, op, sub, data, t0, conf):
    if op in TEARDOWN:
        from nova_tlbbalance.hook import teardown
        return teardown.run(name, op, sub, data, t0, conf)
    if op in STARTUP:
        where = None
        if op in BACKGROUND:
            from nova_tlbbalance.hook import detach
            where = detach.to_background(name, op, data, conf)
            if where == 'parent':
                return 0            # libvirt goes on; the child works
        from nova_tlbbalance.hook import phases
        return phases.run(name, op, sub, data, t0, conf,
                          background=where == 'child')
    return 0


if __name__ == '__main__':
    sys.exit(main())
