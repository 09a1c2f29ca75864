#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""nova-compute of a fast host of the cloud in a box: nova's own
``nova-compute`` (``nova.cmd.compute.main``) with the plugin's driver and
one flag more for live migrations, nothing else.

``[DEFAULT] compute_driver = tlbbalance_box.BoxDriver`` (configs.py)
names :class:`BoxDriver`: the plugin's ``TLBBalanceLibvirtDriver`` whose
live migrations carry ``VIR_MIGRATE_UNSAFE``. The two fast hosts are one
machine and share one instances directory, so a guest's disk IS the same
file on both; but it lies on a local file system (ext4 here), and libvirt
refuses a live migration of a disk that is neither on a file system it
knows as shared (NFS, GFS2, Ceph, ...) nor copied ("Unsafe migration:
Migration without shared storage is unsafe"). nova has no option for the
flag (it never sets it: on real hosts the storage is shared or the disks
are block-migrated). Everything else, the plugin's live-migration seams
included, is the product's code unchanged. (docs/cloud.md, "Live
migration".)
"""

import os
import sys
import types

# run as a script, its directory comes first on sys.path: tools/cloud's
# openstack.py would shadow the openstack SDK nova imports
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != _HERE]

# nova's own entry point first: its start-up order (monkey patching)
from nova.cmd.compute import main  # noqa: E402

MODULE = 'nova.virt.tlbbalance_box'   # compute_driver tlbbalance_box.*


def driver_class():
    import libvirt

    from nova.virt import tlbbalance

    class BoxDriver(tlbbalance.TLBBalanceLibvirtDriver):
        """The plugin's driver; live migrations with VIR_MIGRATE_UNSAFE
        (the module doc says why)."""

        def _parse_migration_flags(self):
            super()._parse_migration_flags()
            self._live_migration_flags |= libvirt.VIR_MIGRATE_UNSAFE

    return BoxDriver


def install():
    """Make ``nova.virt.tlbbalance_box.BoxDriver`` importable (nova
    imports ``nova.virt.<compute_driver>``)."""
    mod = types.ModuleType(MODULE)
    mod.BoxDriver = driver_class()
    sys.modules[MODULE] = mod
    return mod


if __name__ == '__main__':
    install()
    sys.argv[0] = 'nova-compute'
    sys.exit(main())
