# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance status``: what every running VM gets from huge pages."""

import json

from nova_tlbbalance.cli import _common
from nova_tlbbalance.probes import records
from nova_tlbbalance.probes import verdict

COLUMNS = ('NAME', 'POLICY', 'BACKING', 'HUGE', 'ALIGNED', 'STAGE2',
           'VCPUS->CPUS', 'DIES/CL', 'MODULE')


def register(sub):
    p = sub.add_parser('status', help='huge-page facts of every running VM')
    _common.add_source_options(p)
    p.add_argument('--json', action='store_true', help='machine-readable')
    p.set_defaults(func=run)


def _fmt_stage2(rep):
    if rep.stage2:
        return ' '.join('%s=%s' % kv for kv in sorted(rep.stage2.items()))
    if rep.stage2_unavailable:
        return 'n/a (%s)' % rep.stage2_unavailable
    return '-'


def _fmt_module(rep):
    mod = rep.module
    if mod is not None and mod.registered:
        st = mod.status or {}
        return '%s %s/%s%s' % (st.get('state', '?'),
                               st.get('huge_pages', '?'),
                               st.get('huge_limit', '?'),
                               ' STUCK' if mod.limiter else '')
    if not rep.managed:
        return '-'
    # Tagged, but the module does not manage it (the VM runs regardless).
    return 'unmanaged: %s' % ((mod and mod.reason) or 'not registered')


def _q(value):
    return '?' if value is None else value


def _fmt_coverage(pol, cov):
    if cov is None:
        return '?'
    text = '%.1f%%' % (100 * cov.coverage)
    if pol is not None and verdict.judged_on_resident(pol):
        # Not pre-faulted: the share of the resident RAM is what counts.
        text += ' (res %s)' % ('?' if cov.resident_coverage is None
                               else '%.1f%%' % (100 * cov.resident_coverage))
    return text


def row(rep):
    pol = rep.policy
    cov = rep.coverage
    return (
        rep.name,
        '%s/%s/%s' % (pol.mode, pol.backing, pol.tlbi_scope)
        if pol else 'unmanaged',
        _q(rep.backing),
        _fmt_coverage(pol, cov),
        '?' if rep.aligned is None else ('yes' if rep.aligned else 'NO'),
        _fmt_stage2(rep),
        '%d->%s' % (len(rep.vcpus or ()), _q(rep.cpus_allowed)),
        '%s/%s' % (_q(rep.dies), _q(rep.clusters)),
        _fmt_module(rep),
    )


def table(host, reps):
    rows = [COLUMNS] + [row(r) for r in reps]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(COLUMNS))]
    pmd = host.hpage_pmd_size
    lines = ['host: THP %s, PMD %s KiB, %d CPUs in %d die(s) / %d '
             'cluster(s), DVMBM %s (%s), module %s'
             % (host.thp or '?', '?' if pmd is None else pmd // 1024,
                host.cpus, host.dies, host.clusters,
                'enabled' if host.dvmbm.enabled else 'off',
                host.dvmbm.source,
                'loaded' if host.module.loaded else
                'NOT loaded (%s absent)' % host.module.configfs)]
    for r in rows:
        lines.append('  '.join(str(c).ljust(w)
                               for c, w in zip(r, widths)).rstrip())
    for rep in reps:
        for e in rep.errors:
            lines.append('%s: %s' % (rep.name, e))
        for n in rep.notes:
            lines.append('%s: note: %s' % (rep.name, n))
        if rep.module is not None and rep.module.limiter:
            lines.append('%s: %s' % (rep.name, rep.module.limiter))
    return '\n'.join(lines)


def run(args):
    host, reps = _common.collect(args)
    if args.json:
        print(json.dumps(records.document(host, reps), indent=2,
                         sort_keys=True))
    else:
        print(table(host, reps))
    return 0
