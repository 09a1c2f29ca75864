# SPDX-License-Identifier: Apache-2.0
"""nova's provider config file with this host's tlbbalance traits.

``python3 -m nova_tlbbalance.provider_config [--output FILE]`` writes (or
prints) a provider config file, schema 1.0 of nova's
``[compute] provider_config_location`` (nova's
doc/source/admin/managing-resource-providers.rst), that adds these traits
to the compute node's resource provider, from facts read on this host:

* ``CUSTOM_TLBBALANCE_DVMBM``: the kernel limits TLBI broadcast per VM
  (DVMBM, as ``tlbbalance status`` detects it:
  :func:`nova_tlbbalance.hostfacts.dvmbm`): a fact of the hardware and
  the kernel, fixed until the host reboots;
* ``CUSTOM_TLBBALANCE_MODULE`` only with ``--module-trait``: the module
  comes and goes under a running nova-compute (upgrades, removal), which
  reads this file only when it starts, so the driver plugin owns that
  trait (:func:`module_state`, reported at every resource update:
  docs/upgrade.md, "Placement traits follow the module"). The option is
  for a nova-compute that cannot see the module (the test cloud's kvm
  host, whose libvirtd runs in another kernel).

Flavors then ask for them (``trait:CUSTOM_TLBBALANCE_DVMBM=required``).
With ``--output`` the file is rewritten only when its text changes, and
the first word printed is ``written`` or ``unchanged`` (the Ansible role
restarts nova-compute only on ``written``; nova reads the file at start).
Standard library only.
"""

import argparse
import re
import sys

from nova_tlbbalance import filewrite
from nova_tlbbalance import hostfacts
from nova_tlbbalance import modclient

TRAIT_MODULE = 'CUSTOM_TLBBALANCE_MODULE'
TRAIT_DVMBM = 'CUSTOM_TLBBALANCE_DVMBM'
# nova's provider config schema (SCHEMA_V1): trait names
TRAIT_RE = re.compile(r'^CUSTOM_[A-Z0-9_]{1,248}$')
UUID_RE = re.compile(r'^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-'
                     r'[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$')
COMPUTE_NODE = '$COMPUTE_NODE'


def module_state(sys_root='/sys', configfs=None):
    """(usable, why) of tlbbalance.ko here: :meth:`modclient.Client.usable`
    (the strict precondition's test too), configfs under ``sys_root``
    unless given."""
    configfs = configfs or (sys_root + modclient.DEFAULT_ROOT[len('/sys'):])
    return modclient.Client(configfs).usable()


def host_traits(sys_root='/sys', proc_root='/proc', configfs=None,
                kmsg_lines=None, module_trait=False):
    """[(trait, why)] of this host, in a fixed order; the module trait
    only when ``module_trait`` (see the module's docstring)."""
    out = []
    if module_trait:
        usable, why = module_state(sys_root, configfs)
        if usable:
            out.append((TRAIT_MODULE, why))
    dv = hostfacts.dvmbm(proc_root, sys_root, kmsg_lines=kmsg_lines)
    if dv['enabled']:
        out.append((TRAIT_DVMBM, 'DVMBM enabled (%s)' % dv['source']))
    return out


def render(traits, uuid=COMPUTE_NODE, name=None):
    """The YAML text. traits: [(trait, why)]; the provider is named by
    name, else by uuid (default: every compute node of this service)."""
    for trait, _ in traits:
        if not TRAIT_RE.match(trait):
            raise ValueError('bad trait name %r: a custom trait is '
                             'CUSTOM_ followed by A-Z, 0-9 and _' % trait)
    if name is not None:
        if not 0 < len(name) <= 200 or "'" in name or '\n' in name:
            raise ValueError('bad provider name %r (1-200 characters, no '
                             'quote nor newline)' % name)
        ident = "name: '%s'" % name
    else:
        if uuid != COMPUTE_NODE and not UUID_RE.match(uuid):
            raise ValueError('bad provider uuid %r: a UUID or %s'
                             % (uuid, COMPUTE_NODE))
        ident = "uuid: '%s'" % uuid
    lines = ['# Written by python3 -m nova_tlbbalance.provider_config '
             '(nova-tlbbalance): the',
             '# traits of this host, read by nova-compute from '
             '[compute] provider_config_location.']
    for trait, why in traits:
        lines.append('# %s: %s' % (trait, why))
    if not traits:
        lines.append('# No tlbbalance trait applies to this host.')
    lines += ['meta:', "  schema_version: '1.0'", 'providers:',
              '  - identification:', '      ' + ident]
    if traits:
        lines += ['    traits:', '      additional:']
        lines += ["        - '%s'" % t for t, _ in traits]
    return '\n'.join(lines) + '\n'


def main(argv=None):
    p = argparse.ArgumentParser(
        prog='python3 -m nova_tlbbalance.provider_config',
        description=__doc__.split('\n')[0])
    p.add_argument('--output', metavar='FILE',
                   help='write here (a .yaml file in nova\'s '
                   'provider_config_location) instead of printing')
    ident = p.add_mutually_exclusive_group()
    ident.add_argument('--uuid', default=COMPUTE_NODE,
                       help='provider UUID (default: %(default)s, every '
                       'compute node this nova-compute manages)')
    ident.add_argument('--name', help='provider name instead of a UUID')
    p.add_argument('--trait', action='append', default=[], metavar='TRAIT',
                   help='an extra CUSTOM_ trait (repeatable)')
    p.add_argument('--module-trait', action='store_true',
                   help='also write %s when the module is usable here '
                   '(only for a nova-compute that cannot see the module: '
                   'otherwise the driver plugin reports it)' % TRAIT_MODULE)
    p.add_argument('--check', action='store_true',
                   help='with --output: write nothing, say "would write" '
                   'or "unchanged"')
    p.add_argument('--sys-root', default='/sys', help=argparse.SUPPRESS)
    p.add_argument('--proc-root', default='/proc', help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    traits = host_traits(args.sys_root, args.proc_root,
                         module_trait=args.module_trait)
    traits += [(t, 'asked for (--trait)') for t in args.trait
               if t not in [x for x, _ in traits]]
    try:
        text = render(traits, uuid=args.uuid, name=args.name)
    except ValueError as e:
        p.error(str(e))
    # the module's state, for the reader (the role's verification): on
    # stderr, as stdout may be the file's text
    usable, why = module_state(args.sys_root)
    print('tlbbalance module: %s (%s)' % ('usable' if usable else 'unusable',
                                          why), file=sys.stderr)
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        if args.check:
            wrote = filewrite.differs(args.output, text, 0o644)
        else:
            wrote = filewrite.write_if_changed(args.output, text, 0o644)
    except OSError as exc:
        # e.g. a directory bind-mounted into a container that its user
        # may not write (docs/deploy-kolla-ansible.md): one line, no
        # traceback
        print('provider_config: cannot write %s: %s'
              % (args.output, exc.strerror or exc), file=sys.stderr)
        return 1
    print('%s %s traits=%s' % ((('would write' if args.check else 'written')
                                if wrote else 'unchanged'),
                               args.output,
                               ','.join(t for t, _ in traits) or '-'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
