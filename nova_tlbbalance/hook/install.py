"""Install the libvirt hook: ``python3 -m nova_tlbbalance.hook.install``.

Copies ``libvirt-hooks/tlbbalance`` to ``/etc/libvirt/hooks/qemu.d/``
(coexisting with the operator's own hooks there), with this interpreter
(run with ``-S``) in its ``#!`` line, the directory holding
``nova_tlbbalance`` on its path, and any settings given here baked in
(libvirtd scrubs the environment of the hooks it runs). Restart libvirtd
afterwards: it looks for hooks at start.
"""

import argparse
import os
import sys

import nova_tlbbalance
from nova_tlbbalance import filewrite

DEST = '/etc/libvirt/hooks/qemu.d/tlbbalance'
BEGIN = '# -- settings (written by the installer) --\n'
END = '# -- end of settings --\n'
SETTINGS = (
    ('configfs', 'TLBB_CONFIGFS', 'module configfs root'),
    ('timeout', 'TLBB_HOOK_TIMEOUT', 'hard time limit per phase, s'),
    ('log_file', 'TLBB_HOOK_LOG', 'also append JSON lines here'),
    ('state_dir', 'TLBB_STATE_DIR', 'where once-only markers go'),
    ('syslog', 'TLBB_SYSLOG', "syslog socket ('' = stderr)"),
)


def template_path():
    here = os.path.dirname(os.path.abspath(nova_tlbbalance.__file__))
    for cand in (os.path.join(here, '..', 'libvirt-hooks', 'tlbbalance'),
                 os.path.join(sys.prefix, 'share', 'nova-tlbbalance',
                              'libvirt-hooks', 'tlbbalance')):
        if os.path.isfile(cand):
            return os.path.normpath(cand)
    raise FileNotFoundError('libvirt-hooks/tlbbalance not found next to '
                            'the package nor under %s/share' % sys.prefix)


def render(template, python, pkg_parent, settings):
    lines = template.splitlines(True)
    # -S: no site import (the hook needs the standard library only and
    # gets the package from the sys.path line below): faster start.
    lines[0] = '#!%s -S\n' % python
    text = ''.join(lines)
    if BEGIN not in text or END not in text:
        raise ValueError('hook template lacks the settings markers')
    body = ['sys.path.insert(0, %r)\n' % pkg_parent]
    for key, env, _ in SETTINGS:
        if settings.get(key) is not None:
            body.append('os.environ.setdefault(%r, %r)\n'
                        % (env, str(settings[key])))
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + ''.join(body) + END + tail


def install(dest=DEST, python=None, settings=None):
    """Write the hook to dest unless it is already there, same text and
    executable; returns True when it wrote it (so that a rollout restarts
    libvirtd only then)."""
    python = python or sys.executable
    pkg_parent = os.path.dirname(os.path.dirname(
        os.path.abspath(nova_tlbbalance.__file__)))
    with open(template_path()) as f:
        text = render(f.read(), python, pkg_parent, settings or {})
    return filewrite.write_if_changed(dest, text, 0o755)


def main(argv=None):
    p = argparse.ArgumentParser(prog='python3 -m nova_tlbbalance.hook.'
                                'install', description=__doc__.split('\n')[0])
    p.add_argument('--dest', default=DEST)
    p.add_argument('--python', help='interpreter (default: this one)')
    p.add_argument('--uninstall', action='store_true')
    for key, env, help_ in SETTINGS:
        p.add_argument('--' + key.replace('_', '-'), help='%s (%s)'
                       % (help_, env))
    args = p.parse_args(argv)
    if args.uninstall:
        try:
            os.unlink(args.dest)
        except FileNotFoundError:
            pass
        return 0
    wrote = install(args.dest, args.python,
                    {k: getattr(args, k) for k, _, _ in SETTINGS})
    # "installed" or "unchanged": Ansible's changed_when reads this word.
    print('%s %s' % ('installed' if wrote else 'unchanged', args.dest))
    return 0


if __name__ == '__main__':
    sys.exit(main())
