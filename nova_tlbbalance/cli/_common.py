# SPDX-License-Identifier: Apache-2.0
"""Options and helpers shared by status, verify and exporter."""

import argparse
import sys

from nova_tlbbalance import modclient
from nova_tlbbalance.probes import libvirt_conn
from nova_tlbbalance.probes import vmreport


def add_source_options(p):
    p.add_argument('--uri', default=libvirt_conn.DEFAULT_URI,
                   help='libvirt URI (default %(default)s)')
    p.add_argument('--configfs', default=None,
                   help='tlbbalance configfs root (default $%s or %s)'
                   % (modclient.ENV_ROOT, modclient.DEFAULT_ROOT))
    p.add_argument('--no-monitor', action='store_true',
                   help='skip QEMU monitor queries (gpa2hva, query-stats)')
    p.add_argument('--run-dir', default='/run/libvirt/qemu',
                   help=argparse.SUPPRESS)


def gather(args):
    """(host facts, VM reports); raises libvirt_conn.LibvirtUnavailable."""
    roots = vmreport.Roots(run_dir=args.run_dir,
                           configfs=modclient.root_dir(args.configfs))
    return vmreport.collect(roots, args.uri, not args.no_monitor)


def collect(args):
    """gather(), or exit 2 naming why libvirt cannot be reached."""
    try:
        return gather(args)
    except libvirt_conn.LibvirtUnavailable as exc:
        sys.stderr.write('tlbbalance: %s\n' % exc)
        raise SystemExit(2)
