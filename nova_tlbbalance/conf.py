# SPDX-License-Identifier: Apache-2.0
"""The ``[tlbbalance]`` options of nova.conf (oslo.config).

Registered on nova's CONF by :mod:`nova_tlbbalance.driver`; listed for
``oslo-config-generator`` by :func:`list_opts` (entry point
``oslo.config.opts``: ``nova_tlbbalance``).
"""

from oslo_config import cfg

from nova_tlbbalance import extra_specs as es

GROUP = 'tlbbalance'


def _choices(name):
    spec = es.BY_KEY['%s:%s' % (es.PREFIX, name)]
    return list(zip(spec.choices, spec.choice_help))


def _table_default(name):
    return es.BY_KEY['%s:%s' % (es.PREFIX, name)].default


opts = [
    cfg.StrOpt(
        'default_mode',
        choices=_choices('mode'),
        help='Policy mode for flavors that carry no tlbbalance:* extra '
             'spec. Unset (the default): such flavors are not managed and '
             'their guest XML is exactly stock nova\'s. Set it to manage '
             'every instance on this compute host.'),
    cfg.StrOpt(
        'default_backing',
        choices=_choices('backing'),
        help='Backing used when a managed flavor does not set '
             'tlbbalance:backing. Unset: %r.' % _table_default('backing')),
    cfg.StrOpt(
        'default_tlbi_scope',
        choices=_choices('tlbi_scope'),
        help='TLB-invalidate scope used when a managed flavor does not set '
             'tlbbalance:tlbi_scope. Unset: %r.'
             % _table_default('tlbi_scope')),
    cfg.BoolOpt(
        'default_strict',
        help='Strictness used when a managed flavor does not set '
             'tlbbalance:strict. Unset: %s.' % _table_default('strict')),
    cfg.BoolOpt(
        'default_prefault',
        help='Pre-faulting of THP-backed guest RAM used when a managed '
             'flavor does not set tlbbalance:prefault (false: guest RAM is '
             'faulted in as the guest touches it, so nova\'s RAM '
             'overcommit works). Unset: %s.' % _table_default('prefault')),
    cfg.IntOpt(
        'thp_page_size_kb',
        default=0,
        min=0,
        help='Huge page size in KiB that guest memory of THP-backed '
             'instances is rounded down to (a whole number of huge pages). '
             '0: read the host\'s '
             '/sys/kernel/mm/transparent_hugepage/hpage_pmd_size.'),
    cfg.BoolOpt(
        'allocation_threads',
        default=True,
        help='Pre-fault THP-backed guest RAM with one thread per vCPU '
             '(<allocation mode="immediate" threads="N"/>) where the '
             'libvirt version supports it (>= 8.2.0).'),
    cfg.BoolOpt(
        'report_module_trait',
        default=True,
        help='Report the CUSTOM_TLBBALANCE_MODULE trait on this compute '
             'node\'s resource provider while the tlbbalance kernel module '
             'can take registrations here, and remove it while it cannot '
             '(unloaded, configfs not mounted, interface unreadable): '
             'checked at every resource update '
             '([DEFAULT] update_resources_interval). Off only where '
             'nova-compute cannot see the module, e.g. libvirtd in another '
             'kernel; then give the trait by a provider config.'),
]


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def defaults(conf):
    """The policy defaults from ``conf`` for Policy.from_extra_specs."""
    group = conf[GROUP]
    return {'mode': group.default_mode,
            'backing': group.default_backing,
            'tlbi_scope': group.default_tlbi_scope,
            'strict': group.default_strict,
            'prefault': group.default_prefault}


def list_opts():
    return [(GROUP, opts)]
