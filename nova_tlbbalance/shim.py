# SPDX-License-Identifier: Apache-2.0
"""Put nova's driver-loader shim where nova lives:
``python3 -m nova_tlbbalance.shim install``.

nova loads ``compute_driver = tlbbalance.TLBBalanceLibvirtDriver`` by
importing ``nova.virt.tlbbalance``. The wheel and the Debian package ship
that module beside nova when they are installed into nova's own
site-packages (pip in nova's virtualenv, ``python3-nova-tlbbalance`` next
to Debian's ``python3-nova``). When this package is installed elsewhere
(a virtualenv made with ``--system-site-packages`` over a distribution's
nova, ``pip install --prefix /usr/local``), ``nova`` is a regular package
in another directory and Python never looks for ``nova.virt.tlbbalance``
beside this package: nova cannot load the driver. Run with the Python
nova runs from, ``install`` writes the shim into the directory of the
``nova.virt`` that Python imports; ``remove`` takes back only a shim this
command wrote; ``status`` says what ``nova.virt.tlbbalance`` resolves to
(exit status 1 when nova cannot load the driver).
"""

import argparse
import importlib.util
import os
import sys

from nova_tlbbalance import filewrite

# The text of nova/virt/tlbbalance/__init__.py as this distribution ships
# it (tests/unit/test_shim.py keeps the two the same), then the marker of
# a shim written by this command.
SHIPPED = '''\
# SPDX-License-Identifier: Apache-2.0
"""Loader shim: nova imports ``nova.virt.<compute_driver>``.

With ``[DEFAULT] compute_driver = tlbbalance.TLBBalanceLibvirtDriver`` nova
imports this module and takes the class from it. Only this package is
shipped: ``nova`` and ``nova.virt`` are nova's own.
"""

from nova_tlbbalance.driver import TLBBalanceLibvirtDriver

__all__ = ['TLBBalanceLibvirtDriver']
'''
MARKER = ('# written by `python3 -m nova_tlbbalance.shim install`; '
          'removed by `... shim remove`\n')
WRITTEN = SHIPPED + MARKER
IMPORT = 'from nova_tlbbalance.driver import TLBBalanceLibvirtDriver'


class ShimError(Exception):
    """The shim cannot be placed or removed; the message says why."""


def nova_virt_dir():
    """The directory of the ``nova.virt`` package this Python imports."""
    try:
        spec = importlib.util.find_spec('nova.virt')
    except ImportError as exc:
        raise ShimError('%s cannot import nova (%s): run this with the '
                        'Python nova runs from' % (sys.executable, exc))
    if spec is None or not spec.submodule_search_locations:
        raise ShimError('%s finds no nova.virt package: run this with the '
                        'Python nova runs from' % sys.executable)
    return list(spec.submodule_search_locations)[0]


def target(virt_dir=None):
    return os.path.join(virt_dir or nova_virt_dir(), 'tlbbalance',
                        '__init__.py')


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def install(virt_dir=None):
    """Write the shim into nova.virt's directory unless a shim of this
    package is already there (shipped by pip or dpkg, or written before).
    True when it wrote; ShimError when another file has the name."""
    path = target(virt_dir)
    text = _read(path)
    if text is not None:
        if IMPORT in text:
            return False
        raise ShimError('%s exists and is not the nova-tlbbalance shim: '
                        'left as it is' % path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return filewrite.write_if_changed(path, WRITTEN, 0o644)


def remove(virt_dir=None):
    """Remove a shim :func:`install` wrote (not one a package manager
    installed: that one goes with the package). True when it removed."""
    path = target(virt_dir)
    text = _read(path)
    if text is None:
        return False
    if MARKER not in text:
        raise ShimError('%s was not written by this command (it belongs to '
                        'the installed package): left as it is' % path)
    os.unlink(path)
    d = os.path.dirname(path)
    cache = os.path.join(d, '__pycache__')
    if os.path.isdir(cache):
        for name in os.listdir(cache):
            if name.startswith('__init__.'):
                os.unlink(os.path.join(cache, name))
        if not os.listdir(cache):
            os.rmdir(cache)
    if not os.listdir(d):
        os.rmdir(d)
    return True


def status():
    """(ok, text): whether ``nova.virt.tlbbalance`` resolves, for this
    Python, to a shim of this package, and what it resolves to."""
    virt = nova_virt_dir()
    spec = importlib.util.find_spec('nova.virt.tlbbalance')
    if spec is None:
        return False, ('nova.virt.tlbbalance not found (nova.virt is %s): '
                       'run `%s -m nova_tlbbalance.shim install`'
                       % (virt, sys.executable))
    text = _read(spec.origin) or ''
    if IMPORT not in text:
        return False, '%s is not the nova-tlbbalance shim' % spec.origin
    how = 'written by this command' if MARKER in text else 'packaged'
    return True, '%s (%s)' % (spec.origin, how)


def main(argv=None):
    p = argparse.ArgumentParser(
        prog='python3 -m nova_tlbbalance.shim',
        description='place nova.virt.tlbbalance (the module nova imports '
        'for compute_driver = tlbbalance.TLBBalanceLibvirtDriver) in the '
        'nova.virt package of this Python')
    p.add_argument('action', choices=('install', 'remove', 'status'))
    args = p.parse_args(argv)
    try:
        if args.action == 'install':
            wrote = install()
            print('%s %s' % ('installed' if wrote else 'unchanged',
                             target()))
        elif args.action == 'remove':
            print('%s %s' % ('removed' if remove() else 'absent',
                             target()))
        else:
            ok, text = status()
            print(text)
            return 0 if ok else 1
    except ShimError as exc:
        print('shim: %s' % exc, file=sys.stderr)
        return 1
    except OSError as exc:
        # e.g. nova's package directory is not writable for this user
        print('shim: %s %s: %s' % (args.action, exc.filename or target(),
                                   exc.strerror or exc), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
