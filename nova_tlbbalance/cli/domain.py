# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance domain apply``: a plain libvirt domain XML, tagged.

The same code as the nova driver plugin (nova_tlbbalance.guest_config), for
users without nova: the policy is given as the same ``tlbbalance:*`` keys a
flavor would carry.
"""

import sys

from nova_tlbbalance import extra_specs
from nova_tlbbalance import hostfacts
from nova_tlbbalance import policy as policy_mod


def register(sub):
    p = sub.add_parser('domain', help='libvirt domain XML tools')
    dsub = p.add_subparsers(dest='domain_command', metavar='ACTION')
    dsub.required = True
    a = dsub.add_parser(
        'apply', help='add a tlbbalance policy to a domain XML',
        description='Read a libvirt domain XML (file or -), print it with '
        'the settings the nova driver plugin would add for the same extra '
        'specs.')
    a.add_argument('xml', help='domain XML file, or - for stdin')
    a.add_argument('--spec', '-s', action='append', default=[],
                   metavar='KEY=VALUE',
                   help='a %s:* extra spec, e.g. -s mode=balance -s '
                   'backing=thp (prefix optional); keys: %s'
                   % (extra_specs.PREFIX,
                      ', '.join(s.name for s in extra_specs.SPECS)))
    a.add_argument('--huge-page-kib', type=int, default=None,
                   help='round guest memory down to this huge page size '
                   '(default: the host\'s hpage_pmd_size)')
    a.add_argument('--allocation-threads', action='store_true',
                   help='add threads=<vCPUs> to <allocation> '
                   '(libvirt >= 8.2)')
    a.add_argument('-o', '--output', default='-')
    a.set_defaults(func=apply)


def _specs(items):
    out = {}
    for item in items:
        key, sep, value = item.partition('=')
        if not sep or not key:
            raise ValueError('--spec %r: expected KEY=VALUE' % item)
        if not key.startswith(extra_specs.PREFIX + ':'):
            key = '%s:%s' % (extra_specs.PREFIX, key)
        out[key] = value
    return out


def apply(args):
    from nova_tlbbalance import guest_config    # lxml: not on hook paths
    try:
        specs = _specs(args.spec)
        if not specs:
            raise ValueError('no --spec given: nothing to apply')
        pol = policy_mod.Policy.from_extra_specs(specs)
        if args.xml == '-':
            xml = sys.stdin.read()
        else:
            with open(args.xml) as f:
                xml = f.read()
        kib = args.huge_page_kib
        if kib is None:
            size = hostfacts.hpage_pmd_size()
            kib = None if size is None else size // 1024
            if kib is None:
                sys.stderr.write('tlbbalance domain apply: the host huge '
                                 'page size is unreadable (%s): memory not '
                                 'rounded; give --huge-page-kib\n'
                                 % hostfacts.HPAGE_PMD_SIZE)
        out = guest_config.apply_to_domain_xml(
            xml, pol, huge_page_kib=kib,
            allocation_threads=args.allocation_threads)
    except (ValueError, OSError) as exc:
        sys.stderr.write('tlbbalance domain apply: %s\n' % exc)
        return 2
    if args.output == '-':
        sys.stdout.write(out)
    else:
        with open(args.output, 'w') as f:
            f.write(out)
    return 0
