# SPDX-License-Identifier: Apache-2.0
"""What tox -e packaging and tox -e deb share: the tree, setup.cfg's
metadata (the one version, docs/releasing.md) and a command run with its
time and status printed, failing the test with the command's tail."""

import configparser
import os
import subprocess
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def setup_cfg():
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(os.path.join(TOP, 'setup.cfg'))
    return cfg['metadata']


VERSION = setup_cfg()['version']


def build_debs(tmp_path_factory, timeout):
    """The two .debs built by ``make deb``'s script into a fresh
    directory (the ``debs`` fixture of tox -e deb and tox -e distro)."""
    out = tmp_path_factory.mktemp('deb')
    run([os.path.join(TOP, 'tools', 'deb', 'build.sh'), str(out)], timeout)
    return str(out)


def scratch(path, dirs, script_name, script):
    """Make ``dirs`` under ``path`` and write ``script`` there as
    ``script_name``; the script's path (a test's private work area:
    test_distro's overlay, test_kolla's podman storage)."""
    for d in dirs:
        os.makedirs(os.path.join(path, d))
    out = os.path.join(path, script_name)
    with open(out, 'w') as f:
        f.write(script)
    return out


def run(argv, timeout, **kw):
    t0 = time.monotonic()
    res = subprocess.run(argv, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         timeout=timeout, **kw)
    took = time.monotonic() - t0
    print('$ %s (%.0f s, rc %d)' % (' '.join(argv)[:300], took,
                                    res.returncode))
    assert res.returncode == 0, res.stdout[-6000:]
    return res.stdout
