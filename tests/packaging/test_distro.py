# SPDX-License-Identifier: Apache-2.0
"""tox -e distro: this package beside a distribution's nova.

Debian 13 (trixie) ships nova 31 (2025.1) as ``nova-compute`` and
``python3-nova``. A trixie root with them, made from Debian's archive by
mmdebstrap (tools/deb/distro-root.sh: the mirror this machine's apt
uses; built once, ~2 minutes, then cached under
~/.cache/nova-tlbbalance/distro keyed by the package list), is the lower
layer of an overlay of each test's own, mounted in a private mount and
PID namespace and entered with chroot: the cached root is never changed
and nothing stays mounted or running after a command.

- The Debian package (``make deb``, built here from the tree) installed
  by apt beside Debian's nova: apt installs it alone (every dependency is
  already there: nova's environment is not changed), and nova, with
  ``compute_driver = tlbbalance.TLBBalanceLibvirtDriver``, loads the
  driver through ``nova.virt.driver.load_compute_driver`` as
  nova-compute does (tests/packaging/nova_loader.py); nova-api's
  validators refuse a bad ``tlbbalance:mode``.
- The virtualenv case: a virtualenv made with ``--system-site-packages``
  over Debian's nova, this package's sdist installed into it by pip with
  no index (everything it requires comes from Debian's packages, so pip
  installs this distribution only). There nova cannot load the driver
  (``nova`` is Debian's regular package, the shim pip installed in the
  virtualenv is never looked at) until ``python -m nova_tlbbalance.shim
  install`` places the shim in Debian's ``nova/virt``; ``shim remove``
  takes it back.
"""

import json
import os
import sys

import pytest

from pkgtest import TOP, VERSION, build_debs, run, scratch

SUITE = 'trixie'
# nova-compute and python3-nova as an operator installs them; the venv
# module; python3-nova-tlbbalance's own dependencies (some are nova's
# already) so that installing it needs nothing from the network
PACKAGES = ('nova-compute', 'python3-nova', 'python3-venv',
            'python3-lxml', 'python3-oslo.config',
            'python3-prometheus-client', 'python3-yaml', 'python3-bcrypt')
ROOT_TIMEOUT = 1800     # a cold root: ~2 minutes here, more under load
BUILD_TIMEOUT = 900
RUN_TIMEOUT = 600       # importing nova at load average 10+: ~40 s
PY = 'python3-nova-tlbbalance_%s_all.deb' % VERSION
SDIST = 'nova_tlbbalance-%s.tar.gz' % VERSION
DRIVER = 'nova_tlbbalance.driver.TLBBalanceLibvirtDriver'
DEBIAN_SHIM = '/usr/lib/python3/dist-packages/nova/virt/tlbbalance/' \
    '__init__.py'
VENV = '/opt/nova-venv'


@pytest.fixture(scope='module')
def base():
    out = run([os.path.join(TOP, 'tools', 'deb', 'distro-root.sh'), SUITE] +
              list(PACKAGES), ROOT_TIMEOUT)
    root = out.strip().splitlines()[-1]
    assert os.path.isfile(os.path.join(root, '.tlbb-complete')), out
    return root


@pytest.fixture(scope='module')
def debs(tmp_path_factory):
    return build_debs(tmp_path_factory, BUILD_TIMEOUT)


@pytest.fixture(scope='module')
def sdist(tmp_path_factory):
    out = tmp_path_factory.mktemp('sdist')
    run([sys.executable, '-m', 'build', '--sdist', '--no-isolation',
         '--outdir', str(out), TOP], BUILD_TIMEOUT)
    return str(out / SDIST)


# Run as root in a mount and PID namespace of its own: the overlay (the
# cached root below, the test's directory above), /proc and /dev, then
# chroot; all of it goes when the command ends.
ENTER = '''set -e
low=$1 ov=$2
shift 2
mount -t overlay overlay \
    -o "lowerdir=$low,upperdir=$ov/upper,workdir=$ov/work" "$ov/root"
mount -t proc proc "$ov/root/proc"
mount --rbind /dev "$ov/root/dev"
exec chroot "$ov/root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 HOME=/root "$@"
'''


class Overlay:
    """The cached root under a writable layer of this test's own."""

    def __init__(self, base, path):
        self.base = base
        self.path = str(path)
        self.enter = scratch(self.path, ('upper/tmp', 'work', 'root'),
                             'enter.sh', ENTER)

    def put(self, src, name=None):
        """Copy a file into the root's /tmp; its path in the root."""
        name = name or os.path.basename(src)
        with open(src, 'rb') as f, open(os.path.join(
                self.path, 'upper', 'tmp', name), 'wb') as g:
            g.write(f.read())
        return '/tmp/' + name

    def write(self, name, text):
        with open(os.path.join(self.path, 'upper', 'tmp', name), 'w') as f:
            f.write(text)
        return '/tmp/' + name

    def run(self, *argv, timeout=RUN_TIMEOUT):
        return run(['unshare', '--mount', '--pid', '--fork',
                    '--propagation', 'private', 'sh', self.enter,
                    self.base, self.path] + list(argv), timeout)

    def load(self, python):
        """nova_loader.py's report, run with python in the root."""
        out = self.run(python, self.loader, self.conf)
        # the report is one line; nova's warnings go to stderr around it
        return json.loads([ln for ln in out.splitlines()
                           if ln.startswith('{"nova"')][-1])

    def prepare_loader(self):
        self.loader = self.put(os.path.join(os.path.dirname(__file__),
                                            'nova_loader.py'))
        self.conf = self.write('tlbbalance-driver.conf', '[DEFAULT]\n'
                               'compute_driver = '
                               'tlbbalance.TLBBalanceLibvirtDriver\n')


def nova_version(ov):
    out = ov.run('dpkg-query', '-W', '-f', '${Version}\\n', 'python3-nova')
    return out.strip().splitlines()[-1]


def test_debian_nova_loads_the_driver_of_the_deb(base, debs, tmp_path):
    ov = Overlay(base, tmp_path / 'ov')
    ov.prepare_loader()
    assert nova_version(ov).startswith('2:31.')
    deb = ov.put(os.path.join(debs, PY))
    out = ov.run('apt-get', 'install', '-y', '-q', deb)
    # nothing else installed, upgraded or removed: nova's environment as
    # Debian made it
    assert '0 upgraded, 1 newly installed, 0 to remove' in out, out
    owner = ov.run('dpkg', '-S', DEBIAN_SHIM)
    assert owner.strip() == 'python3-nova-tlbbalance: %s' % DEBIAN_SHIM

    got = ov.load('/usr/bin/python3')
    print('nova_loader.py: %s' % json.dumps(got, indent=1))
    assert got['nova'].startswith('31.')
    assert got['compute_driver'] == 'tlbbalance.TLBBalanceLibvirtDriver'
    assert got['loaded'] == DRIVER
    assert got['mro'][1:3] == ['nova.virt.libvirt.driver.LibvirtDriver',
                               'nova.virt.driver.ComputeDriver']
    assert got['shim'] == DEBIAN_SHIM
    assert got['package'] == ('/usr/lib/python3/dist-packages/'
                              'nova_tlbbalance/__init__.py')
    assert got['bogus'] == ("Validation failed; tlbbalance:mode: invalid "
                            "value 'bogus'; allowed: off | monitor | "
                            "balance.")
    assert ov.run('tlbbalance', '--version').splitlines()[-1] == \
        'tlbbalance %s' % VERSION


def test_virtualenv_over_debian_nova(base, sdist, tmp_path):
    ov = Overlay(base, tmp_path / 'ov')
    ov.prepare_loader()
    src = ov.put(sdist)
    py = VENV + '/bin/python3'
    ov.run('python3', '-m', 'venv', '--system-site-packages', VENV)
    # no index: what the package requires must already be there (Debian's
    # packages), and the build uses Debian's setuptools
    out = ov.run(py, '-m', 'pip', 'install', '--no-index',
                 '--no-build-isolation', '--disable-pip-version-check', src)
    assert out.splitlines()[-1] == \
        'Successfully installed nova-tlbbalance-%s' % VERSION, out
    site = ov.run(py, '-c', 'import nova_tlbbalance, nova; '
                  'print(nova_tlbbalance.__file__, nova.__file__)').split()
    assert site[0].startswith(VENV + '/lib/python3')
    assert site[1] == '/usr/lib/python3/dist-packages/nova/__init__.py'

    # pip's shim is in the venv; nova is Debian's: nova cannot load it
    got = ov.load(py)
    assert got['loaded'] is None and got['exit'] == 1, got
    status = ov.run('sh', '-c', '%s -m nova_tlbbalance.shim status; '
                    'echo "rc=$?"' % py)
    assert 'nova.virt.tlbbalance not found' in status
    assert status.splitlines()[-1] == 'rc=1'

    out = ov.run(py, '-m', 'nova_tlbbalance.shim', 'install')
    assert out.splitlines()[-1] == 'installed %s' % DEBIAN_SHIM
    got = ov.load(py)
    print('nova_loader.py: %s' % json.dumps(got, indent=1))
    assert got['nova'].startswith('31.')
    assert got['loaded'] == DRIVER
    assert got['shim'] == DEBIAN_SHIM
    assert got['package'].startswith(VENV + '/lib/python3')
    assert got['bogus'].startswith('Validation failed; tlbbalance:mode')

    out = ov.run(py, '-m', 'nova_tlbbalance.shim', 'remove')
    assert out.splitlines()[-1] == 'removed %s' % DEBIAN_SHIM
    assert not os.path.exists(os.path.join(
        ov.path, 'upper', DEBIAN_SHIM.lstrip('/')))
