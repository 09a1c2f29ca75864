# SPDX-License-Identifier: Apache-2.0
"""The ``[tlbbalance]`` options of nova.conf (oslo.config).

Registered on nova's CONF by :mod:`nova_tlbbalance.driver`; listed for
``oslo-config-generator`` by :func:`list_opts` (entry point
``oslo.config.opts``: ``nova_tlbbalance``).
"""

from oslo_config import cfg

from nova_tlbbalance import extra_specs as es

GROUP = 'tlbbalance'


def _host_default(spec):
    """``[tlbbalance] default_<name>``: the host's value of a policy key
    for a flavor that does not set it (help and choices from the table;
    every key but mode says its table default)."""
    help_ = spec.host_default
    if spec.name != 'mode':
        default = spec.default
        help_ += ' Unset: %s.' % (repr(default) if spec.kind == 'enum'
                                  else default)
    if spec.kind == 'bool':
        return cfg.BoolOpt('default_' + spec.name, help=help_)
    return cfg.StrOpt('default_' + spec.name, help=help_,
                      choices=list(zip(spec.choices, spec.choice_help)))


opts = [_host_default(s) for s in es.SPECS if not s.param] + [
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
    return {s.name: group['default_' + s.name]
            for s in es.SPECS if not s.param}


def list_opts():
    return [(GROUP, opts)]
