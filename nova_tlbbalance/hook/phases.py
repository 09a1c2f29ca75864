# SPDX-License-Identifier: Apache-2.0
"""What the hook does in the start-up phases of a tagged domain.

prepare   hugetlbfs: free huge pages per host NUMA node; thp: host THP on
          (a non-strict THP domain skips this phase: hook.main; its
          check is made in started)
started   find QEMU's pid, vCPU threads and guest RAM ranges, check
          alignment and TLBI scope, register with the module
reconnect (libvirtd restarted) register again when the module does not hold
          the VM or holds it stale (another pid, mode or parameter);
          never refuses: libvirt would kill the running QEMU

(stopped/release are in :mod:`nova_tlbbalance.hook.teardown`, which needs
none of the policy and probe imports.)

A problem is logged and the VM goes on, unless the policy is strict: then
the phase exits 1 and libvirt fails the start with our message. Each phase
runs under a hard timer (the ``timeout`` setting, hook.conf).
"""

import os
import sys
import time

from nova_tlbbalance import policy as policy_mod
from nova_tlbbalance.hook.common import Failure
from nova_tlbbalance.hook.common import bounded
from nova_tlbbalance.hook.common import ms as _ms
from nova_tlbbalance.hook.common import setup
from nova_tlbbalance.probes import domxml
from nova_tlbbalance.shown import clip
from nova_tlbbalance.shown import shown

# Each phase is a process of its own, on the critical path of `virsh
# start`: a phase imports what it uses (prepare: preconditions; started:
# hostfacts, proc, memmap, modclient), in the function, not here.


# the phases where a failure of a strict domain refuses it
REFUSING = ('prepare', 'started')


def run(name, op, sub, data, t0, conf=None, background=False):
    """background: in the detached child (hook.detach); said in the
    record."""
    config, log = setup(conf)
    try:
        pol = policy_mod.Policy.from_domain_xml(data)
        dom = domxml.parse(data) if pol is not None else None
    except ValueError as exc:
        # One rule with the hook's other error paths (hook.strictness):
        # a policy element whose strict attribute says true fails closed
        # at a start (prepare, started) even if the rest of it does not
        # parse; otherwise the VM runs unmanaged. reconnect (libvirtd
        # restarted under a running guest) never kills the guest for it.
        from nova_tlbbalance.hook import strictness
        strict = strictness.declared(data) is True
        rc = 1 if strict and op in REFUSING else 0
        result = 'bad policy: %s' % exc
        if rc:
            sys.stderr.write('tlbbalance (strict policy) refuses domain %s: '
                             '%s\n' % (shown(name), clip(result)))
        log.record(domain=name, phase=op, rc=rc, result=result,
                   elapsed_ms=_ms(t0), **({'strict': True} if strict else {}))
        return rc
    if pol is None:
        return 0
    extra = {'background': True} if background else {}
    for warning in pol.compat_warnings():
        # a newer release's name (docs/upgrade.md): managed without it
        log('warning', 'domain %s: %s' % (shown(name), warning))
    if pol.unknown:
        extra['ignored'] = ' '.join(sorted(str(u) for u in pol.unknown))
    t1 = time.monotonic()
    refusal = pol.refusal()
    if refusal:
        result, failed = 'failed: %s' % refusal, True
    else:
        result, failed = bounded(config.timeout, HANDLERS[op], dom, pol,
                                 config, log, extra)
    extra['work_ms'] = _ms(t1)      # elapsed_ms minus this: imports
    # reconnect: the VM is running and libvirt kills its QEMU when the hook
    # fails ("If the script fails, the existing QEMU process will be killed
    # off", libvirt's hooks page): strict guards a start, never a running VM
    rc = 1 if failed and pol.strict and op != 'reconnect' else 0
    if rc:
        sys.stderr.write('tlbbalance (strict policy) refuses domain %s: %s\n'
                         % (shown(name), clip(result)))
    log.record(domain=name, phase=op, sub=sub, rc=rc, strict=pol.strict,
               mode=pol.mode, result=result, elapsed_ms=_ms(t0), **extra)
    return rc


# -- prepare --------------------------------------------------------------

def prepare(dom, pol, config, log, extra):
    from nova_tlbbalance import preconditions
    try:
        return preconditions.memory(dom, pol, config.sys, config.proc)
    except preconditions.Unmet as exc:
        raise Failure(str(exc)) from None


# -- started ----------------------------------------------------------------

def inspect(dom, pol, config):
    """(pid, vcpu threads, ranges, problems) of the running domain
    (:func:`nova_tlbbalance.rules.running`); a QEMU without vCPU threads
    fails the phase."""
    from nova_tlbbalance import rules
    try:
        return rules.running(dom, pol, config)
    except rules.NoVcpuThreads as exc:
        raise Failure(str(exc)) from None


def _module_absent(config, log):
    from nova_tlbbalance import modclient
    marker = os.path.join(config.state_dir, 'module-absent-logged')
    if os.path.exists(marker):
        return
    log('warning', 'the tlbbalance kernel module is not loaded (%s missing):'
        ' tagged VMs run unmanaged until it is; logged once until it '
        'appears' % modclient.root_dir(config.configfs))
    try:
        os.makedirs(config.state_dir, exist_ok=True)
        open(marker, 'w').close()
    except OSError:
        pass


def started(dom, pol, config, log, extra, reconnect=False):
    from nova_tlbbalance import modclient
    pid, threads, ranges, problems = inspect(dom, pol, config)
    extra.update(pid=pid, vcpus=len(threads), ranges=len(ranges))
    if pol.backing == 'thp' and not reconnect:
        # prepare's check, for the domains that skip prepare
        # (hook.strictness.prepare_can_wait): the same answer after the
        # start. Made for every THP domain (one sysfs read, again for a
        # strict one that prepare checked) so that this condition cannot
        # miss a domain that rule lets skip, and every record says it.
        from nova_tlbbalance import preconditions
        try:
            extra['host_thp'] = preconditions.thp(config.sys)
        except preconditions.Unmet as exc:
            problems = problems + [str(exc)]
    for p in problems:
        log('warning', 'domain %s: %s' % (shown(dom.name), p))
    if problems and pol.strict and not reconnect:
        # (at reconnect the VM runs already: registered, problems logged)
        raise Failure('; '.join(problems))
    client = modclient.Client(config.configfs)
    if not client.present():
        _module_absent(config, log)
        if pol.strict:
            # the driver plugin checks the same before the start
            from nova_tlbbalance import preconditions
            try:
                preconditions.module(pol, config.configfs)
            except preconditions.Unmet as exc:
                raise Failure(str(exc)) from None
        return 'module absent: not registered' + (
            '; %d problem(s)' % len(problems) if problems else '')
    try:
        os.unlink(os.path.join(config.state_dir, 'module-absent-logged'))
    except OSError:
        pass
    from nova_tlbbalance import reconcile
    vm = modclient.vm_dir_name(dom.name, dom.uuid)
    again = ''
    if reconnect:
        # libvirtd restarted: register when missing or stale (reconcile's
        # test: pid, mode and the policy's parameters)
        reasons = reconcile.stale(client, vm, pid, pol)
        if reasons == []:
            return 'already registered as %s' % vm
        again = ' (was stale: %s)' % '; '.join(reasons) if reasons else ''
    warning = reconcile.interface_warning(client)
    try:
        warnings = reconcile.register(client, vm, pid, threads, ranges, pol)
    except modclient.ModuleError as exc:
        raise Failure(str(exc)) from None
    for w in ([warning] if warning else []) + warnings:
        log('warning', 'domain %s: %s' % (shown(dom.name), w))
    return 'registered as %s (mode %s)' % (vm, pol.mode) + again + (
        '; %d problem(s)' % len(problems) if problems else '')


def reconnect(dom, pol, config, log, extra):
    return started(dom, pol, config, log, extra, reconnect=True)


HANDLERS = {
    'prepare': prepare,
    'started': started,
    'reconnect': reconnect,
}
