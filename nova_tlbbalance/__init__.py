# SPDX-License-Identifier: Apache-2.0
"""nova-tlbbalance: huge pages that pay off for KVM guests.

The package's version has one source, ``[metadata] version`` in setup.cfg
(docs/releasing.md); :func:`version` gives it to whatever reports it
(``tlbbalance --version``, the exporter's build info), and the kernel
module's ``MODULE_VERSION`` is what ``loaded_module_version`` reads back.
This module stays import-cheap: the libvirt hook imports the package on
every VM event.
"""

import os

DISTRIBUTION = 'nova-tlbbalance'
_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tree_version(top):
    """setup.cfg's version when ``top`` is a nova-tlbbalance source tree,
    else None."""
    import configparser

    cfg = configparser.ConfigParser(interpolation=None)
    if not cfg.read(os.path.join(top, 'setup.cfg')):
        return None
    meta = cfg['metadata'] if cfg.has_section('metadata') else {}
    if meta.get('name') != DISTRIBUTION:
        return None
    return meta.get('version')


def version():
    """This package's version, e.g. ``"0.1.0"``.

    Imported from a source tree (a checkout on PYTHONPATH, an editable
    install): the tree's setup.cfg, so it is never a stale copy. Installed:
    the distribution's metadata, which the build took from setup.cfg.
    Neither (files copied by hand): ``"unknown"``.
    """
    found = _tree_version(_TOP)
    if found:
        return found
    from importlib import metadata
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return 'unknown'


def loaded_module_version(sysfs='/sys'):
    """The loaded tlbbalance.ko's ``MODULE_VERSION`` (from
    ``/sys/module/tlbbalance/version``), or None when the module is not
    loaded or states no version."""
    try:
        with open(os.path.join(sysfs, 'module', 'tlbbalance',
                               'version')) as f:
            return f.read().strip() or None
    except OSError:
        return None
