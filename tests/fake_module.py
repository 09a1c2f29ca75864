# SPDX-License-Identifier: Apache-2.0
"""A directory laid out like tlbbalance.ko's configfs tree, for tests that
cannot load the module (the host has none; the real module runs in
tests/e2e and the kernel tests): ``version`` and, per VM, the
registration files and one file per tunable of ``tlbb_params.def``."""

from nova_tlbbalance import module_defs

ATTRS = ('pid', 'vcpu_tids', 'ranges', 'mode', 'status', 'commit')


def fake_module_tree(root, vms=('vm1',), commit=True, pid=''):
    """Make the tree at root (a pathlib.Path) and return it.
    ``commit=False``: a module older than staged registration; ``pid``:
    what each VM's pid file holds."""
    (root / 'vms').mkdir(parents=True)
    (root / 'version').write_text('1\n')
    for vm in vms:
        d = root / 'vms' / vm
        d.mkdir()
        for a in ATTRS + tuple(p.name for p in module_defs.params()):
            if a != 'commit' or commit:
                (d / a).write_text(pid if a == 'pid' else '')
    return root
