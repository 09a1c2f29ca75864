# SPDX-License-Identifier: Apache-2.0
"""Is a tagged VM what its flavor asked for? (``tlbbalance verify``)

Alignment and TLBI scope are worded by :mod:`nova_tlbbalance.rules`, as
the driver and the hook word them.
"""

from nova_tlbbalance import rules

DEFAULT_MIN_COVERAGE = 0.95


def coverage_causes(rep, pol, host):
    """What explains a VM's low huge-page coverage, as far as the host
    facts (``host``, a records.HostFacts) and its XML tell."""
    out = []
    if pol.backing != 'thp':
        return out
    if host is not None and host.thp == 'never':
        out.append('host transparent huge pages are off '
                   '(/sys/kernel/mm/transparent_hugepage/enabled: never)')
    if pol.prefault and 'immediate' not in (rep.backing or ''):
        out.append("guest RAM is allocated on demand (no <allocation "
                   "mode='immediate'/>): only what the guest touched is "
                   "backed")
    return out


def judged_on_resident(pol):
    """True when the coverage of ``pol``'s VM (a policy.Policy) is
    judged on its resident RAM: THP backing not pre-faulted."""
    return pol.backing == 'thp' and not pol.prefault


def reasons(rep, min_coverage=DEFAULT_MIN_COVERAGE, need_module=True,
            host=None):
    """[reason] why the VM in report ``rep`` (a records.VmReport) is not
    as its policy asks; [] when it is, or when it is not managed by
    tlbbalance at all. ``host``: the records.HostFacts, to name the cause
    of low coverage."""
    pol = rep.policy
    if not rep.managed or pol is None:
        return []
    out = ['cannot inspect: %s' % e for e in rep.errors]
    if pol.backing != 'none':
        for r in rep.ranges or ():
            if r.misalignment:
                out.append(rules.misalignment(
                    r.block, r.gpa,
                    r.hva if r.gpa2hva is None else r.gpa2hva,
                    r.misalignment, rep.page_size))
            if r.gpa2hva is not None and r.gpa2hva != r.hva:
                out.append('RAM block %s: QEMU maps GPA 0x%x at 0x%x, not at '
                           '0x%x as read from /proc/<pid>/maps (the hook '
                           'registers the latter)'
                           % (r.block, r.gpa, r.gpa2hva, r.hva))
        cov = rep.coverage
        # Not pre-faulted: untouched RAM is not a fault; the share of the
        # RAM the guest made resident is judged instead.
        lazy = judged_on_resident(pol)
        share = None if cov is None else (
            cov.resident_coverage if lazy else cov.coverage)
        if share is not None and share < min_coverage:
            out.append('under-covered: %.1f %% of %s is on huge pages '
                       '(%s), below %.1f %%%s%s'
                       % (100 * share,
                          'the resident guest RAM' if lazy else 'guest RAM',
                          'AnonHugePages' if pol.backing == 'thp'
                          else 'hugetlb', 100 * min_coverage,
                          ' (tlbbalance:prefault=false)' if lazy else '',
                          ''.join('; ' + c for c in coverage_causes(
                              rep, pol, host))))
        if pol.backing == 'hugetlbfs' and \
                not (rep.backing or '').startswith('hugetlbfs'):
            out.append('backing=hugetlbfs asked, domain is backed by %s'
                       % rep.backing)
    scope = pol.tlbi_scope
    if scope in rules.SCOPES:
        count = (rep.dies if scope == 'die' else rep.clusters) or 0
        if count > 1:
            out.append(rules.scope_wider(scope, rep.cpus_allowed, count))
    for v in rep.vcpus or ():
        if not v.matches_pin:
            out.append('vCPU %s (thread %d) may run on CPUs %s, pinned to %s'
                       % (v.vcpu, v.tid, v.affinity, v.pinned))
    mod = rep.module
    registered = mod is not None and mod.registered
    if pol.mode != 'off' and need_module and not registered:
        out.append('not registered with the tlbbalance module: %s'
                   % ((mod and mod.reason) or 'unknown'))
    if registered and mod.limiter:
        out.append(mod.limiter)
    return out
