# SPDX-License-Identifier: Apache-2.0
"""The earlier releases of this repository that tests run beside this
one (docs/upgrade.md): their commits, named here only, and
:func:`export`, the one way to get one's tree.

- :data:`PREVIOUS` (N-1): the first commit with the N / N-1 contract
  (the merge of the contract, reconcile and the hook's ``reconnect``
  phase), the oldest release the contract promises to work beside this
  one. The cloud in a box runs a compute host on it
  (``TLBB_CLOUD_RELEASE_N1``, docs/cloud.md) for the mixed-version
  tempest test. ``$TLBB_PREVIOUS_RELEASE`` overrides it.
- :data:`BEFORE_CONTRACT` (release 0.1.0 as deployed): the last commit
  before the contract, whose readers refuse every name they do not know;
  tests/unit/test_releases.py shows what it does (the reason for the
  order of hosts). ``$TLBB_BEFORE_CONTRACT_RELEASE`` overrides it.
"""

import os
import subprocess

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PREVIOUS = os.environ.get('TLBB_PREVIOUS_RELEASE') or '541c7f4'
BEFORE_CONTRACT = (os.environ.get('TLBB_BEFORE_CONTRACT_RELEASE') or
                   'fd0ccf8')

# What a release's tree needs to run: the package, its hook script (the
# installer copies it from beside the package) and the .def tables its
# package data links to.
PATHS = ('nova_tlbbalance', 'libvirt-hooks', 'kernel-module/core')


def export(commit, dest, top=TOP):
    """Export ``commit``'s :data:`PATHS` into ``dest`` (made if needed)
    with ``git archive``; returns ``dest``. Put ``dest`` first on a
    process's ``sys.path`` (``PYTHONPATH``) and it imports that release's
    ``nova_tlbbalance``. An error names the commit and the repository."""
    archive = subprocess.run(
        ['git', '-C', top, 'archive', '--format=tar', commit] +
        list(PATHS), capture_output=True, check=False, timeout=120)
    if archive.returncode:
        raise RuntimeError('cannot export release %s from %s: %s'
                           % (commit, top, archive.stderr.decode().strip()))
    os.makedirs(dest, exist_ok=True)
    subprocess.run(['tar', '-x', '-C', dest], input=archive.stdout,
                   check=True, timeout=120)
    with open(os.path.join(dest, 'RELEASE'), 'w') as f:
        f.write(commit + '\n')
    return dest
