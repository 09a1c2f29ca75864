# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance reload``: the module reloaded under running VMs in one
warm process: release every registration, run the unload and load
commands, reconcile, and time each VM's unmanaged window.

``release`` then ``reconcile --released`` do the same in two processes;
here the imports, the libvirt connection and the running domains are
ready before the first VM is released, so a window is the unload, the
load and the registrations themselves (under an emulated CPU a Python
start alone costs seconds). The Ansible role's module step uses it
(docs/upgrade.md, "Module upgrade under running VMs").
"""

import argparse
import json
import socket
import subprocess
import sys
import time

from nova_tlbbalance import modclient
from nova_tlbbalance.cli import reconcile as cli_reconcile
from nova_tlbbalance.cli import release as cli_release
from nova_tlbbalance.probes import libvirt_conn

# exit status (the role's script acts on each)
OK, NOT_HELD, NO_LIBVIRT, RELEASE_FAILED, UNLOAD_FAILED, LOAD_FAILED = range(6)


def register(sub):
    p = sub.add_parser(
        'reload', help='release every VM, unload and load the module, '
        'register the VMs again; print each VM\'s unmanaged window',
        description='In one process: connect to libvirt, release every '
        'registration (as `tlbbalance release`, written to --released), '
        'run --unload, run --load, then reconcile (as `tlbbalance '
        'reconcile --released`: windows printed, --record written). Exit '
        'status: 0 done; 1 the new module is loaded but a VM released is '
        'not registered again; 2 libvirt cannot be reached (nothing '
        'released); 3 a VM could not be released (the others registered '
        'again, nothing unloaded); 4 --unload failed (VMs registered '
        'again); 5 --load failed (no module loaded: VMs unmanaged). '
        'Messages on stderr begin with "tlbbalance reload: ".')
    p.add_argument('--unload', required=True, metavar='CMD',
                   help='shell command unloading the module, e.g. '
                   '"rmmod tlbbalance"')
    p.add_argument('--load', required=True, metavar='CMD',
                   help='shell command loading the new build, e.g. '
                   '"modprobe tlbbalance"')
    p.add_argument('--released', required=True, metavar='FILE',
                   help='where the release document is written (what '
                   '`tlbbalance reconcile --released` reads after a roll '
                   'back)')
    p.add_argument('--record', metavar='FILE', default=None,
                   help='write the windows and the notes there as JSON')
    p.add_argument('--note', metavar='KEY=VALUE', action='append',
                   default=[], help='a field of the record; repeatable')
    p.add_argument('--uri', default=libvirt_conn.DEFAULT_URI,
                   help='libvirt URI (default %(default)s)')
    p.add_argument('--configfs', default=None,
                   help='tlbbalance configfs root (default $%s or %s)'
                   % (modclient.ENV_ROOT, modclient.DEFAULT_ROOT))
    p.add_argument('--json', action='store_true', help='machine-readable')
    p.add_argument('--run-dir', default='/run/libvirt/qemu',
                   help=argparse.SUPPRESS)
    p.add_argument('--proc', default='/proc', help=argparse.SUPPRESS)
    p.add_argument('--sys', default='/sys', help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _say(msg):
    sys.stderr.write('tlbbalance reload: %s\n' % msg)


def _sh(cmd):
    """(rc, output) of a shell command."""
    p = subprocess.run(cmd, shell=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout.strip()


def run(args):
    from nova_tlbbalance import reconcile
    from nova_tlbbalance.hook.config import Config
    try:
        notes = cli_reconcile.parse_notes(args.note)
    except ValueError as exc:
        _say(str(exc))
        return NO_LIBVIRT
    config = Config(configfs=args.configfs, run_dir=args.run_dir,
                    proc=args.proc, sys=args.sys)
    client = modclient.Client(args.configfs)
    try:
        conn = libvirt_conn.Connection(args.uri)
    except libvirt_conn.LibvirtUnavailable as exc:
        _say('nothing released: %s' % exc)
        return NO_LIBVIRT

    def again():
        """Reconcile with the domains running now."""
        running = [(n, x) for n, x, _ in conn.running()]
        return reconcile.reconcile(running, client, config)

    try:
        conn.running()              # warm: the first call pays the most
        released = cli_release.release(client, args.proc)
        with open(args.released, 'w') as f:
            json.dump(released, f, indent=2, sort_keys=True)
        if released['errors']:
            again()
            for e in released['errors']:
                _say('cannot release %s: %s (nothing unloaded; the others '
                     'registered again)' % (e['vm'], e['error']))
            return RELEASE_FAILED
        rc, out = _sh(args.unload)
        if rc != 0:
            again()
            _say('unloading failed (%s: rc %d): %s (VMs registered again)'
                 % (args.unload, rc, out))
            return UNLOAD_FAILED
        rc, out = _sh(args.load)
        if rc != 0:
            _say('loading failed (%s: rc %d): %s' % (args.load, rc, out))
            return LOAD_FAILED
        report = again()
        wins = cli_reconcile.windows(released, client, report, time.time(),
                                     args.proc)
    finally:
        conn.close()
    if args.record:
        cli_reconcile.write_record(args.record, dict(
            notes, host=socket.gethostname(), at=time.time(),
            reconcile_errors=len(report.errors), release_errors=[],
            windows=wins))
    doc = report.to_dict()
    doc['windows'] = wins
    if args.json:
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        print(cli_reconcile.text(report))
        print('\n'.join(cli_reconcile.window_lines(wins)))
    lost = [w['vm'] for w in wins
            if not w['registered'] and not w['process_gone']]
    if lost:
        _say('not registered again: %s' % ', '.join(lost))
        return NOT_HELD
    return OK
