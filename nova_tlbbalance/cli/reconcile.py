# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance reconcile``: the module's registrations made to match the
running domains (nova_tlbbalance.reconcile)."""

import argparse
import json
import os
import socket
import sys
import time

from nova_tlbbalance import filewrite
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
    p.add_argument('--released', metavar='FILE', default=None,
                   help='what `tlbbalance release --json` printed before '
                   'the module was reloaded: each VM released there gets '
                   'its unmanaged window (from its release to the end of '
                   'this reconcile), printed and recorded (--record)')
    p.add_argument('--record', metavar='FILE', default=None,
                   help='with --released: write the windows and this '
                   'run\'s outcome as JSON to FILE (e.g. '
                   '/var/lib/tlbbalance/last-upgrade.json)')
    p.add_argument('--note', metavar='KEY=VALUE', action='append',
                   default=[], help='with --record: a field of the record '
                   '(e.g. result=upgraded); repeatable')
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


def windows(released, client, report, now, proc='/proc'):
    """[{vm, pid, released_at, registered_at, window_s, registered,
    same_pid}] for each VM of ``released`` (a `tlbbalance release --json`
    document): registered again when the module holds it now. The end of
    this reconcile (``now``) bounds each re-registration from above."""
    out = []
    errors = {o.vm or o.domain: o.detail for o in report.errors}
    for e in released.get('released', []):
        vm = e['vm']
        pid = ''
        try:
            with open(os.path.join(client.root, 'vms', vm, 'pid')) as f:
                pid = f.read().strip()
        except OSError:
            pass
        w = {'vm': vm, 'pid': e.get('pid'),
             'released_at': e.get('released_at'),
             'registered': bool(pid), 'same_pid': pid == str(e.get('pid')),
             'process_gone': not os.path.exists(
                 os.path.join(proc, str(e.get('pid')))),
             'registered_at': now if pid else None,
             'window_s': (round(now - e['released_at'], 3)
                          if pid and e.get('released_at') else None)}
        if vm in errors:
            w['error'] = errors[vm]
        out.append(w)
    return out


def window_lines(wins):
    lines = []
    for w in wins:
        if w['registered']:
            lines.append('window %s: unmanaged %.1f s (pid %s%s)' % (
                w['vm'], w['window_s'], w['pid'],
                '' if w['same_pid'] else ', now another pid'))
        else:
            lines.append('window %s: not registered again (pid %s%s)%s' % (
                w['vm'], w['pid'],
                ', its process is gone' if w['process_gone'] else '',
                ': %s' % w['error'] if w.get('error') else ''))
    return lines


def write_record(path, doc):
    """The upgrade record, written atomically by filewrite (a random
    temporary name, no symlink followed: root writes it)."""
    filewrite.write_if_changed(
        path, json.dumps(doc, indent=2, sort_keys=True) + '\n', 0o644)


def parse_notes(pairs):
    """``--note KEY=VALUE`` arguments -> dict; ValueError naming the one
    that is not KEY=VALUE."""
    notes = {}
    for kv in pairs:
        k, sep, v = kv.partition('=')
        if not sep or not k:
            raise ValueError('--note %r: not KEY=VALUE' % kv)
        notes[k] = v
    return notes


def run(args):
    from nova_tlbbalance import reconcile
    from nova_tlbbalance.hook.config import Config
    released = None
    if args.released:
        try:
            with open(args.released) as f:
                released = json.load(f)
        except (OSError, ValueError) as exc:
            sys.stderr.write('tlbbalance reconcile: --released %s: %s\n'
                             % (args.released, exc))
            return 2
    try:
        notes = parse_notes(args.note)
    except ValueError as exc:
        sys.stderr.write('tlbbalance reconcile: %s\n' % exc)
        return 2
    try:
        running = domains(args.uri)
    except libvirt_conn.LibvirtUnavailable as exc:
        sys.stderr.write('tlbbalance reconcile: %s\n' % exc)
        return 2
    config = Config(configfs=args.configfs, run_dir=args.run_dir,
                    proc=args.proc, sys=args.sys)
    client = modclient.Client(args.configfs)
    report = reconcile.reconcile(running, client, config)
    doc = report.to_dict()
    wins = None
    if released is not None:
        wins = windows(released, client, report, time.time(), args.proc)
        doc['windows'] = wins
        if args.record:
            rec = dict(notes, host=socket.gethostname(), at=time.time(),
                       reconcile_errors=len(report.errors),
                       release_errors=released.get('errors', []),
                       windows=wins)
            write_record(args.record, rec)
    if args.json:
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        print(text(report, args.verbose))
        if wins is not None:
            print('\n'.join(window_lines(wins)))
    if wins is not None:
        # after a reload: what counts is that every VM released before it
        # is held again (or its QEMU is gone); other domains' errors are
        # printed above and were there before the reload
        lost = [w['vm'] for w in wins
                if not w['registered'] and not w['process_gone']]
        if lost:
            sys.stderr.write('tlbbalance reconcile: not registered again: '
                             '%s\n' % ', '.join(lost))
        return 1 if lost else 0
    return 1 if report.errors else 0
