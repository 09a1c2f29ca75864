"""What the hook does in the start-up phases of a tagged domain.

prepare   hugetlbfs: free huge pages per host NUMA node; thp: host THP on
started   find QEMU's pid, vCPU threads and guest RAM ranges, check
          alignment and TLBI scope, register with the module
reconnect (libvirtd restarted) register again unless already registered

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


def run(name, op, sub, data, t0, conf=None, background=False):
    """background: in the detached child (hook.detach); said in the
    record."""
    config, log = setup(conf)
    try:
        pol = policy_mod.Policy.from_domain_xml(data)
        dom = domxml.parse(data) if pol is not None else None
    except ValueError as exc:
        # The strictness itself is unknown: never block the VM on it.
        log.record(domain=name, phase=op, rc=0, result='bad policy: %s' % exc,
                   elapsed_ms=_ms(t0))
        return 0
    if pol is None:
        return 0
    extra = {'background': True} if background else {}
    t1 = time.monotonic()
    result, failed = bounded(config.timeout, HANDLERS[op], dom, pol, config,
                             log, extra)
    extra['work_ms'] = _ms(t1)      # elapsed_ms minus this: imports
    rc = 1 if failed and pol.strict else 0
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

def scope_problem(scope, allowed, topo):
    """Why CPUs ``allowed`` break tlbi_scope ``scope`` ('die' or
    'cluster') on the host topology ``topo``, or None when they keep to one
    (the rules module's finding, as the driver and ``verify`` word it).
    """
    from nova_tlbbalance import rules
    return rules.scope_problem(scope, allowed, topo)


def inspect(dom, pol, config):
    """(pid, vcpu threads, ranges, problems) of the running domain."""
    from nova_tlbbalance import hostfacts
    from nova_tlbbalance.probes import memmap
    from nova_tlbbalance.probes import proc
    pid = proc.qemu_pid(dom.name, config.run_dir)
    threads = proc.vcpu_threads(pid, config.proc)
    if not threads:
        raise Failure('QEMU pid %d has no vCPU threads ("CPU n/KVM")' % pid)
    blocks, ranges = memmap.guest_ram(dom, pid, config.proc)
    page = hostfacts.guest_page_size(
        dom, config.proc, config.sys,
        hugetlbfs=pol.backing == 'hugetlbfs' or dom.uses_hugetlbfs)
    from nova_tlbbalance import rules
    problems = []
    if page is None:
        problems.append(rules.page_size_unknown(config.sys))
    else:
        problems.extend(rules.misaligned(ranges, page))
    if pol.tlbi_scope in ('die', 'cluster'):
        allowed = set()
        for _, tid, _ in threads:
            allowed.update(proc.affinity(tid))
        problem = scope_problem(pol.tlbi_scope, allowed,
                                hostfacts.cpu_topology(config.sys))
        if problem:
            problems.append(problem)
    return pid, threads, ranges, problems


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
    for p in problems:
        log('warning', 'domain %s: %s' % (shown(dom.name), p))
    if problems and pol.strict:
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
    vm = modclient.vm_dir_name(dom.name, dom.uuid)
    if reconnect and client.exists(vm):
        st = client.status(vm) or {}
        if st.get('pid') == str(pid):
            return 'already registered as %s' % vm
    try:
        client.register(vm, pid, [t for _, t, _ in threads],
                        [(r.hva, r.length, r.gpa) for r in ranges],
                        mode=pol.mode, params=pol.params)
    except modclient.ModuleError as exc:
        raise Failure(str(exc)) from None
    return 'registered as %s (mode %s)' % (vm, pol.mode) + (
        '; %d problem(s)' % len(problems) if problems else '')


def reconnect(dom, pol, config, log, extra):
    return started(dom, pol, config, log, extra, reconnect=True)


HANDLERS = {
    'prepare': prepare,
    'started': started,
    'reconnect': reconnect,
}
