# SPDX-License-Identifier: Apache-2.0
"""Install the libvirt hook: ``python3 -m nova_tlbbalance.hook.install``.

Copies ``libvirt-hooks/tlbbalance`` to ``/etc/libvirt/hooks/qemu.d/``
(coexisting with the operator's own hooks there), with this interpreter
(run with ``-IS``) in its ``#!`` line, the directory holding
``nova_tlbbalance`` on its path and the path of its settings file
(``--config``, default ``/etc/tlbbalance/hook.conf``, :mod:`.config`).
Setting options given here are validated and written to that file; with
none, an existing file is checked and kept, a missing one is written
with every default commented. The hook reads the file at every run: a
settings change needs no restart; a new or changed hook script needs a
libvirtd restart (it looks for hooks at start).
"""

import argparse
import os
import sys

import nova_tlbbalance
from nova_tlbbalance import filewrite
from nova_tlbbalance.hook import config

DEST = '/etc/libvirt/hooks/qemu.d/tlbbalance'
BEGIN = '# -- written by the installer --\n'
END = '# -- end of what the installer writes --\n'


def template_path():
    here = os.path.dirname(os.path.abspath(nova_tlbbalance.__file__))
    for cand in (os.path.join(here, '..', 'libvirt-hooks', 'tlbbalance'),
                 os.path.join(sys.prefix, 'share', 'nova-tlbbalance',
                              'libvirt-hooks', 'tlbbalance')):
        if os.path.isfile(cand):
            return os.path.normpath(cand)
    raise FileNotFoundError('libvirt-hooks/tlbbalance not found next to '
                            'the package nor under %s/share' % sys.prefix)


def render(template, python, pkg_parent, conf):
    lines = template.splitlines(True)
    # -IS (one word: the kernel passes the rest of a #! line as one
    # argument): no site import, no user site, no PYTHON* variables. The
    # hook needs the standard library only and gets the package from the
    # sys.path line below: faster start, and nothing from the caller's
    # environment changes what runs.
    lines[0] = '#!%s -IS\n' % python
    text = ''.join(lines)
    if BEGIN not in text or END not in text:
        raise ValueError('hook template lacks the installer markers')
    body = ['sys.path.insert(0, %r)\n' % pkg_parent,
            'CONF = %r\n' % conf]
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + ''.join(body) + END + tail


def configure(conf, settings=None, check=False):
    """Write the settings file conf: the given settings (validated: a
    bad one raises config.ConfigError naming it) and every other one as a
    commented default. With no setting given an existing file is only
    checked (operator edits kept). True when it wrote (check: would
    write; nothing is written)."""
    given = {k: v for k, v in (settings or {}).items() if v is not None}
    config.check(given, 'setting')
    if not given and os.path.exists(conf):
        config.Config.load(conf, env={})       # raises if bad
        return False
    if check:
        return filewrite.differs(conf, config.render(given), 0o644)
    return filewrite.write_if_changed(conf, config.render(given), 0o644)


def install(dest=DEST, python=None, settings=None, conf=None, check=False):
    """Write the settings file (:func:`configure`) and the hook to dest
    unless it is already there, same text and executable; returns True
    when it wrote the hook (so that a rollout restarts libvirtd only
    then). A hook outside DEST needs its own conf: the host's
    /etc/tlbbalance/hook.conf is never touched for a test's hook. check:
    write nothing, return whether it would write the hook."""
    if conf is None:
        if os.path.abspath(dest) != DEST:
            raise ValueError('a hook installed at %s needs conf= (its own '
                             'settings file, not %s)' % (dest, config.PATH))
        conf = config.PATH
    configure(conf, settings, check)
    python = python or sys.executable
    pkg_parent = os.path.dirname(os.path.dirname(
        os.path.abspath(nova_tlbbalance.__file__)))
    with open(template_path()) as f:
        text = render(f.read(), python, pkg_parent, os.path.abspath(conf))
    if check:
        return filewrite.differs(dest, text, 0o755)
    return filewrite.write_if_changed(dest, text, 0o755)


def main(argv=None):
    p = argparse.ArgumentParser(prog='python3 -m nova_tlbbalance.hook.'
                                'install', description=__doc__.split('\n')[0])
    p.add_argument('--dest', default=DEST)
    p.add_argument('--python', help='interpreter (default: this one)')
    p.add_argument('--config', default=config.PATH,
                   help='the settings file the hook reads '
                   '(default %(default)s)')
    p.add_argument('--uninstall', action='store_true',
                   help='remove the hook (the settings file stays)')
    p.add_argument('--check', action='store_true',
                   help='write nothing: say what would be written '
                   '("would install", "settings would be written")')
    g = p.add_argument_group('settings', 'written to the --config file '
                             '(docs/hook.md)')
    for s in config.SETTINGS:
        g.add_argument('--' + s.name.replace('_', '-'), dest=s.name,
                       metavar=s.name.upper(), help='%s (default: %s)'
                       % (s.help, s.default))
    args = p.parse_args(argv)
    if args.uninstall:
        try:
            os.unlink(args.dest)
        except FileNotFoundError:
            pass
        return 0
    settings = {s.name: getattr(args, s.name) for s in config.SETTINGS}
    try:
        conf_written = configure(args.config, settings, args.check)
        wrote = install(args.dest, args.python, None, args.config,
                        args.check)
    except config.ConfigError as exc:
        p.error(str(exc))
    # "installed"/"would install" or "unchanged" first: Ansible's
    # changed_when reads it.
    print('%s %s' % (('would install' if args.check else 'installed')
                     if wrote else 'unchanged', args.dest))
    print('settings %s %s' % (('would be written' if args.check
                               else 'written')
                              if conf_written else 'unchanged', args.config))
    return 0


if __name__ == '__main__':
    sys.exit(main())
