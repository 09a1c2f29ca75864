# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance reconcile``: the module's registrations made to match the
running domains (nova_tlbbalance.reconcile)."""

import argparse
import json
import sys

from nova_tlbbalance import modclient
from nova_tlbbalance.probes import libvirt_conn


def register(sub):
    p = sub.add_parser(
        'reconcile', help='register every running managed VM the module '
        'does not hold (or holds stale); remove registrations whose '
        'process is gone',
        description='Make the tlbbalance module hold what the running '
        'domains\' policies ask: register the missing or stale ones, remove '
        'registrations whose QEMU is gone; domains without a policy are '
        'never touched. Prints one line per change (and per error, naming '
        'the domain); a second run changes nothing. Exit status: 0 done, '
        '1 some domain could not be reconciled (the others were), 2 libvirt '
        'cannot be reached.')
    p.add_argument('--uri', default=libvirt_conn.DEFAULT_URI,
                   help='libvirt URI (default %(default)s)')
    p.add_argument('--configfs', default=None,
                   help='tlbbalance configfs root (default $%s or %s)'
                   % (modclient.ENV_ROOT, modclient.DEFAULT_ROOT))
    p.add_argument('--json', action='store_true', help='machine-readable')
    p.add_argument('-v', '--verbose', action='store_true',
                   help='also list what was already right')
    p.add_argument('--run-dir', default='/run/libvirt/qemu',
                   help=argparse.SUPPRESS)
    p.add_argument('--proc', default='/proc', help=argparse.SUPPRESS)
    p.add_argument('--sys', default='/sys', help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def domains(uri):
    """[(name, live XML)] of the running domains."""
    conn = libvirt_conn.Connection(uri)
    try:
        return [(name, xml) for name, xml, _ in conn.running()]
    finally:
        conn.close()


def text(report, verbose=False):
    lines = ['module: %s' % report.module]
    lines += ['warning: %s' % w for w in report.warnings]
    for o in report.outcomes:
        if o.action in ('unchanged', 'skipped') and not verbose:
            continue
        lines.append(o.line())
        lines += ['%s: warning: %s' % (o.domain or o.vm, w)
                  for w in o.warnings]
    lines.append('%d changed, %d error(s), %d already right'
                 % (len(report.changes), len(report.errors),
                    sum(o.action == 'unchanged' for o in report.outcomes)))
    return '\n'.join(lines)


def run(args):
    from nova_tlbbalance import reconcile
    from nova_tlbbalance.hook.config import Config
    try:
        running = domains(args.uri)
    except libvirt_conn.LibvirtUnavailable as exc:
        sys.stderr.write('tlbbalance reconcile: %s\n' % exc)
        return 2
    config = Config(configfs=args.configfs, run_dir=args.run_dir,
                    proc=args.proc, sys=args.sys)
    report = reconcile.reconcile(running, modclient.Client(args.configfs),
                                 config)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        print(text(report, args.verbose))
    return 1 if report.errors else 0
