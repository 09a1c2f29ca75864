# SPDX-License-Identifier: Apache-2.0
"""tox -e deb: the Debian packages, built from the tree by one command
(``make deb``, tools/deb/build.sh: debhelper, dh_dkms, pybuild) and
checked as Debian would check them.

``tlbbalance-dkms`` carries the module's sources under
``/usr/src/tlbbalance-X.Y.Z`` with dh_dkms's maintainer scripts;
``python3-nova-tlbbalance`` the package, the ``nova.virt.tlbbalance``
shim inside nova's own package directory, the hook and the command.
lintian reports no error and no warning. Both are installed by apt into
a fresh Debian bookworm root made by mmdebstrap, their dependencies coming
from Debian's archive; there ``tlbbalance --version`` runs, and installing
Debian's kernel headers makes DKMS build the module, whose ``modinfo``
version is the package's. The installs, the upgrade and the purge in that
root are the Ansible role's deb modes' own step
(ansible/roles/tlbbalance/files/tlbbalance-deb.sh, which the role runs
with ansible.builtin.script): its idempotence and check mode are checked
here, where the archive is; the kernel node of tox -e ansible has none.
"""

import os
import re
import subprocess

import pytest

from pkgtest import TOP, VERSION, build_debs, run

BUILD_TIMEOUT = 1200
ROOT_TIMEOUT = 1800     # a bookworm root, the packages, headers, a DKMS build
MIRRORS = ('deb http://deb.debian.org/debian bookworm main',
           'deb http://deb.debian.org/debian-security bookworm-security main')


DKMS = 'tlbbalance-dkms_%s_all.deb' % VERSION
PY = 'python3-nova-tlbbalance_%s_all.deb' % VERSION
# the role's install/purge step, copied into the root (under /root:
# mmdebstrap empties /tmp at its end)
DEB_SH = os.path.join(TOP, 'ansible', 'roles', 'tlbbalance', 'files',
                      'tlbbalance-deb.sh')


@pytest.fixture(scope='module')
def debs(tmp_path_factory):
    return build_debs(tmp_path_factory, BUILD_TIMEOUT)


def contents(deb):
    out = run(['dpkg-deb', '-c', deb], 60)
    return {line.split()[-1].lstrip('.') for line in out.splitlines()}


def field(deb, name):
    return run(['dpkg-deb', '-f', deb, name], 60).strip()


def test_lintian_clean(debs):
    with open(os.path.join(debs, 'lintian.txt')) as f:
        report = f.read()
    print('lintian:\n' + report)
    tags = [ln for ln in report.splitlines() if re.match(r'^[EW]: ', ln)]
    assert not tags, '\n'.join(tags)


def test_dkms_package(debs):
    deb = os.path.join(debs, DKMS)
    files = contents(deb)
    src = '/usr/src/tlbbalance-%s/' % VERSION
    assert {src + f for f in ('dkms.conf', 'Kbuild', 'Makefile',
                              'tlbb_main.c', 'core/tlbb_ctrl.c',
                              'core/tlbb_params.def')} <= files
    # the module's sources only: no tests, benchmarks or objects
    assert not [f for f in files if f.startswith(src) and
                re.search(r'/(tests|bench)/|\.(o|ko)$', f)]
    assert re.search(r'\bdkms\b', field(deb, 'Depends'))
    scripts = run(['dpkg-deb', '-I', deb], 60)
    # dh_dkms's: dkms add/build/install at configure, dkms remove at
    # remove/upgrade
    assert 'postinst' in scripts and 'prerm' in scripts


def test_python_package(debs):
    deb = os.path.join(debs, PY)
    files = contents(deb)
    site = '/usr/lib/python3/dist-packages/'
    assert {site + 'nova/virt/tlbbalance/__init__.py',
            site + 'nova_tlbbalance/__init__.py',
            site + 'nova_tlbbalance/data/tlbb_params.def',
            '/usr/bin/tlbbalance',
            '/usr/share/nova-tlbbalance/libvirt-hooks/tlbbalance',
            '/usr/share/man/man1/tlbbalance.1.gz'} <= files
    # nova's own packages stay python3-nova's
    assert not files & {site + 'nova/__init__.py',
                        site + 'nova/virt/__init__.py'}
    # what compute hosts run only: no tempest plugin (a distribution of
    # its own, tempest-plugin/), no test-only code (tools/tlbbwait.py)
    assert not [f for f in files if 'tempest' in f or
                os.path.basename(f).startswith('wait')], sorted(files)
    depends = field(deb, 'Depends')
    for dep in ('python3-lxml', 'python3-oslo.config',
                'python3-prometheus-client'):
        assert dep in depends, depends


@pytest.fixture(scope='module')
def root(debs, tmp_path_factory):
    """A fresh bookworm root: the role's tlbbalance-deb.sh installs both
    packages (apt-get, their dependencies from Debian's archive), then
    Debian's kernel headers go in, which makes DKMS build the module (its
    kernel postinst hook)."""
    target = str(tmp_path_factory.mktemp('root') / 'bookworm')
    hooks = [
        'mkdir -p "$1/root/debs"',
        'copy-in %s %s %s /root/debs' % (os.path.join(debs, DKMS),
                                         os.path.join(debs, PY), DEB_SH),
        'chroot "$1" sh /root/debs/tlbbalance-deb.sh install '
        'python3-nova-tlbbalance /root/debs/%s 0' % PY,
        'chroot "$1" sh /root/debs/tlbbalance-deb.sh install '
        'tlbbalance-dkms /root/debs/%s 0' % DKMS,
        'chroot "$1" apt-get install -y -q linux-headers-amd64',
    ]
    argv = ['mmdebstrap', '--variant=apt', '--format=directory',
            '--aptopt=Acquire::Retries "3"']
    argv += ['--customize-hook=%s' % h for h in hooks]
    run(argv + ['bookworm', target] + list(MIRRORS), ROOT_TIMEOUT)
    return target


def in_root(root, *argv):
    """argv run in root, with /proc and /dev there (dkms needs both) in a
    mount and PID namespace of its own: nothing stays mounted after."""
    return run(['unshare', '--mount', '--pid', '--fork',
                '--mount-proc=%s/proc' % root, 'sh', '-c',
                'mount --rbind /dev "$0/dev" && exec chroot "$0" env -i '
                'PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"', root] +
               list(argv), 120)


def test_installed_in_a_fresh_root(root):
    status = in_root(root, 'dpkg-query', '-W', '-f',
                     '${Package} ${Version} ${db:Status-Abbrev}\\n',
                     'tlbbalance-dkms', 'python3-nova-tlbbalance')
    assert sorted(status.split('\n')[:2]) == [
        'python3-nova-tlbbalance %s ii ' % VERSION,
        'tlbbalance-dkms %s ii ' % VERSION]
    assert in_root(root, 'tlbbalance', '--version') == \
        'tlbbalance %s\n' % VERSION
    out = in_root(root, 'python3', '-c',
                  'import nova_tlbbalance as t; print(t.version(), '
                  't.__file__)')
    assert out.split() == [VERSION, '/usr/lib/python3/dist-packages/'
                           'nova_tlbbalance/__init__.py']


def deb_sh(root, *args):
    return in_root(root, 'sh', '/root/debs/tlbbalance-deb.sh', *args)


@pytest.mark.parametrize('pkg, deb', [('python3-nova-tlbbalance', PY),
                                      ('tlbbalance-dkms', DKMS)])
def test_role_step_installed_changes_nothing(root, pkg, deb):
    """The role's step again, and in check mode: the version is
    installed, nothing is done or said (the role's changed_when)."""
    for check in ('0', '1'):
        assert deb_sh(root, 'install', pkg, '/root/debs/' + deb, check) == ''


def test_role_step_refuses_the_wrong_package(root):
    res = subprocess.run(
        ['chroot', root, 'sh', '/root/debs/tlbbalance-deb.sh', 'install',
         'tlbbalance-dkms', '/root/debs/' + PY, '0'],
        capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and res.stdout == '', res
    assert res.stderr.startswith('tlbbalance-deb: ') and \
        '/root/debs/%s holds python3-nova-tlbbalance, not tlbbalance-dkms' \
        % PY in res.stderr, res.stderr


def test_dkms_built_the_module_in_the_root(root):
    """Debian's headers went in after the package: DKMS's kernel hook
    built tlbbalance.ko for them, with the package's version."""
    status = in_root(root, 'dkms', 'status', '-m', 'tlbbalance')
    assert re.search(r'^tlbbalance/%s, \S+-amd64, x86_64: installed' %
                     re.escape(VERSION), status, re.M), status
    kver = re.search(r', (\S+-amd64),', status).group(1)
    ko = in_root(root, 'sh', '-c', 'ls /lib/modules/%s/updates/dkms/'
                 'tlbbalance.ko*' % kver).split()[0]
    assert in_root(root, 'modinfo', '-F', 'version', ko).strip() == VERSION
    assert in_root(root, 'modinfo', '-F', 'license', ko).strip() == 'GPL'


NEWER = '+test1'


@pytest.fixture(scope='module')
def newer_debs(tmp_path_factory):
    """The same tree built as VERSION+test1 (make deb's +SUFFIX)."""
    out = tmp_path_factory.mktemp('deb-newer')
    run([os.path.join(TOP, 'tools', 'deb', 'build.sh'), str(out), NEWER],
        BUILD_TIMEOUT)
    return str(out)


def test_upgrade_then_removal_in_the_root(root, newer_debs):
    """The role's script upgrades tlbbalance-dkms in the root (apt-get):
    DKMS builds the new version for the root's kernel and removes the
    old one; the postinst leaves the running kernel (not the root's)
    alone, saying why. Then the script purges it as the role's removal
    does: no build and no source left. (Loading and the reload
    under running VMs need the root's own kernel running: the kernel
    node's test, tests/ansible/test_rollout_deb.py.)"""
    newer = VERSION + NEWER
    deb = 'tlbbalance-dkms_%s_all.deb' % newer
    run(['cp', os.path.join(newer_debs, deb), os.path.join(root, 'tmp')],
        60)
    # the role's step: check mode says what it would do, does nothing
    assert deb_sh(root, 'install', 'tlbbalance-dkms', '/tmp/' + deb,
                  '1') == 'changed: tlbbalance-dkms %s would be installed ' \
        '(check mode)\n' % newer
    assert VERSION + ',' in in_root(root, 'dkms', 'status', '-m',
                                    'tlbbalance')
    out = deb_sh(root, 'install', 'tlbbalance-dkms', '/tmp/' + deb, '0')
    assert out.endswith('changed: tlbbalance-dkms %s installed\n' % newer), \
        out[-3000:]
    status = in_root(root, 'dkms', 'status', '-m', 'tlbbalance')
    assert re.search(r'^tlbbalance/%s, \S+-amd64, x86_64: installed' %
                     re.escape(newer), status, re.M), status
    assert VERSION + ',' not in status, status
    kver = re.search(r', (\S+-amd64),', status).group(1)
    assert in_root(root, 'modinfo', '-k', kver, '-F', 'version',
                   'tlbbalance').strip() == newer
    # the running kernel here is this machine's, with no build: not loaded
    assert 'tlbbalance-dkms: no build of tlbbalance %s for the running ' \
        'kernel' % newer in out, out[-3000:]
    assert in_root(root, 'sh', '-c', 'cat /usr/lib/modules-load.d/'
                   'tlbbalance.conf | grep -v "^#"').strip() == 'tlbbalance'

    # the role's removal (tasks/absent.yml): its script purges the
    # package, check mode first; the prerm's dkms remove leaves no build
    # and no source; a rerun (and check mode then) finds nothing to do
    assert deb_sh(root, 'purge', 'tlbbalance-dkms', '-', '1') == \
        'changed: tlbbalance-dkms would be purged (check mode)\n'
    assert newer + ',' in in_root(root, 'dkms', 'status', '-m',
                                  'tlbbalance')
    out = deb_sh(root, 'purge', 'tlbbalance-dkms', '-', '0')
    assert out.endswith('changed: tlbbalance-dkms purged\n'), out[-3000:]
    assert 'tlbbalance' not in in_root(root, 'dkms', 'status'), \
        'a build is left'
    assert in_root(root, 'sh', '-c', 'ls -d /usr/src/tlbbalance-* '
                   '/usr/lib/tlbbalance-dkms 2>/dev/null; true') == ''
    assert in_root(root, 'sh', '-c', "dpkg-query -W -f '${db:Status-Abbrev}'"
                   ' tlbbalance-dkms 2>/dev/null; true') in ('', 'un ')
    for check in ('0', '1'):
        assert deb_sh(root, 'purge', 'tlbbalance-dkms', '-', check) == ''


@pytest.mark.parametrize('arg, says', [
    (VERSION, 'is not newer than the changelog'),
    ('0.0.1', 'is not newer than the changelog'),
    ('-x', 'give +SUFFIX'),
])
def test_build_refuses_a_version_that_is_not_newer(tmp_path, arg, says):
    """build.sh OUTDIR VERSION makes a newer package only (an upgrade
    test's), and names what it refused."""
    p = subprocess.run([os.path.join(TOP, 'tools', 'deb', 'build.sh'),
                        str(tmp_path / 'out'), arg], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 2, p.stdout + p.stderr
    assert says in p.stderr and arg in p.stderr, p.stderr
    assert not list((tmp_path / 'out').glob('*.deb'))
