# SPDX-License-Identifier: Apache-2.0
"""tox -e kolla: the kolla-ansible layout, built and run with podman.

kolla's nova-compute image runs nova from the virtualenv
``/var/lib/kolla/venv``; its Dockerfile pip-installs the plugins that
``kolla-build.conf`` names (``[nova-compute-plugin-<name>]``) into that
virtualenv and ends with the ``nova_compute_footer`` block a template
override fills (docs/deploy-kolla-ansible.md). kolla itself (kolla-build,
its base images) is not used here: the image is built by podman from the
trixie root of tox -e distro (Debian's nova-compute 31, the lower layer,
``podman import``-ed), with a virtualenv at kolla's path over Debian's
nova (kolla's own images have nova inside it), and the steps the footer
block of the guide runs: this package's wheel pip-installed into that
virtualenv with no index (what it requires comes from Debian's
packages), the shim placed where nova is, and ``shim status`` as a
build-time check. Then, in a container of that image, as kolla's user
``nova``, with the nova.conf of the guide's config override bind-mounted
where kolla-ansible puts it, nova loads
``tlbbalance.TLBBalanceLibvirtDriver`` (tests/packaging/nova_loader.py,
as in test_distro.py) and its API validators refuse a bad value.

The nova_libvirt side (the hook installed in the libvirt image by the
``nova_libvirt_footer`` block, its settings bind-mounted) is built the
same way: the hook installer run inside the image writes the image's
interpreter and package path into the hook; the hook, run in a
container of that image by libvirt's argv for ``prepare`` with a tagged
domain on stdin, answers through that interpreter; and in a privileged
container of that image, libvirtd (Debian 13's, 11.3) starts a tagged
TCG domain and runs the hook for each phase. The host kernel here has
no module support and no configfs: the hook finds the QEMU process, its
vCPU and its RAM, and reports the module absent (not registered).

podman runs rootful with its storage, run and temporary directories in
the test's own directory (nothing in /var/lib/containers), each call in
a private mount namespace where the hybrid cgroup v2 mount is unmounted
(crun refuses a cgroup v2 hierarchy that has controllers beside v1 ones:
"cgroups in hybrid mode not supported"), containers without cgroups and
with the network off, and the rlimits this machine allows (podman's
default ``nofile`` limit is above the hard limit here: "setrlimit
RLIMIT_NOFILE: Operation not permitted").
"""

import json
import os
import shutil
import sys

import pytest

from pkgtest import TOP, VERSION, run, scratch
import test_distro

BASE = 'localhost/tlbb-kolla-base:trixie'
COMPUTE = 'localhost/tlbb-nova-compute:test'
LIBVIRT = 'localhost/tlbb-nova-libvirt:test'
WHEEL = 'nova_tlbbalance-%s-py3-none-any.whl' % VERSION
KOLLA_VENV = '/var/lib/kolla/venv'
HOOK = '/etc/libvirt/hooks/qemu.d/tlbbalance'
IMPORT_TIMEOUT = 900    # ~60 s for the 1.1 GiB root at load average 5
BUILD_TIMEOUT = 900
RUN_TIMEOUT = test_distro.RUN_TIMEOUT
DRIVER = test_distro.DRIVER
DEBIAN_NOVA = '/usr/lib/python3/dist-packages/nova'

# One podman call (bash: ulimit -u): a private mount namespace (the
# mounts podman makes go with it), the hybrid cgroup v2 mount out of
# crun's way, storage, run and temporary directories in the test's
# directory, limits within this machine's hard limits.
PODMAN = '''set -e
st=$1
shift
umount /sys/fs/cgroup/unified 2>/dev/null || true
# rootful podman keeps its blob cache in /var/lib/containers/cache
# whatever --root says: a tmpfs of this namespace's own takes its place
mount -t tmpfs -o size=64m,mode=0755 tmpfs /var/lib
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
[ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
cat >"$st/containers.conf" <<EOF
[containers]
cgroups = "disabled"
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
EOF
export CONTAINERS_CONF="$st/containers.conf"
exec podman --root "$st/storage" --runroot "$st/run" --tmpdir "$st/tmp" \
    --storage-driver overlay --cgroup-manager cgroupfs \
    --events-backend file "$@"
'''

# What the template override's nova_compute_footer block holds in the
# guide, after kolla's own steps for a source image (openstack-base's
# virtualenv, the plugins archive pip-installed into it). Here the
# virtualenv sees Debian's nova (--system-site-packages) and the plugin
# is the wheel, installed with no index.
COMPUTE_FILE = '''FROM %(base)s
RUN python3 -m venv --system-site-packages %(venv)s
COPY plugins /plugins
RUN %(venv)s/bin/python3 -m pip --no-cache-dir install --no-index \\
        --disable-pip-version-check /plugins/*.whl
# -- the nova_compute_footer block of docs/deploy-kolla-ansible.md --
RUN %(venv)s/bin/python3 -m nova_tlbbalance.shim install \\
    && %(venv)s/bin/python3 -m nova_tlbbalance.shim status
# --
USER nova
'''

# The nova_libvirt_footer block: the package in a virtualenv of its own
# (kolla's libvirt image has no OpenStack virtualenv; the hook needs the
# standard library only), the hook installed by that virtualenv's python
# (its interpreter and package path written into the hook), its settings
# file where the guide bind-mounts /etc/tlbbalance.
LIBVIRT_FILE = '''FROM %(base)s
COPY plugins /plugins
# -- the nova_libvirt_footer block of docs/deploy-kolla-ansible.md --
RUN python3 -m venv /var/lib/kolla/tlbbalance \\
    && /var/lib/kolla/tlbbalance/bin/python3 -m pip --no-cache-dir \\
        install --no-index --no-deps --disable-pip-version-check \\
        /plugins/*.whl \\
    && /var/lib/kolla/tlbbalance/bin/python3 -m nova_tlbbalance.hook.install
# --
'''

# kolla-ansible merges /etc/kolla/config/nova.conf and
# /etc/kolla/config/nova/nova-compute.conf into the nova-compute
# container's /etc/nova/nova.conf: the guide's override
NOVA_CONF = '''[DEFAULT]
compute_driver = tlbbalance.TLBBalanceLibvirtDriver

[compute]
provider_config_location = /etc/nova/provider_config
'''

TAGGED = ("<domain type='qemu'><name>instance-00000001</name>"
          "<memory unit='KiB'>131072</memory><metadata>"
          "<tlbbalance:policy xmlns:tlbbalance='http://openstack.org/xmlns/"
          "tlbbalance/1.0' mode='monitor' backing='thp' strict='false'/>"
          "</metadata></domain>")


class Podman:
    def __init__(self, path):
        assert shutil.which('podman'), (
            'podman is missing: tools/ci/install-system-deps.sh installs '
            'it (tools/ci/system-packages.txt)')
        self.path = str(path)
        self.wrapper = scratch(self.path, ('storage', 'run', 'tmp'),
                               'podman.sh', PODMAN)

    def argv(self, *args):
        return ['unshare', '--mount', '--propagation', 'private', 'bash',
                self.wrapper, self.path] + list(args)

    def __call__(self, *args, timeout=RUN_TIMEOUT, **kw):
        return run(self.argv(*args), timeout, **kw)

    def container(self, image, *argv, mounts=(), rw=(), user=None,
                  stdin=None, privileged=False):
        opts = ['run', '--rm', '--network=none']
        if privileged:
            opts.append('--privileged')
        for src, dst in mounts:
            opts += ['--volume', '%s:%s:ro' % (src, dst)]
        for src, dst in rw:
            opts += ['--volume', '%s:%s' % (src, dst)]
        if user:
            opts += ['--user', user]
        if stdin is not None:
            opts.append('-i')
        return self(*(opts + [image] + list(argv)), input=stdin)


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp('wheel')
    run([sys.executable, '-m', 'build', '--wheel', '--no-isolation',
         '--outdir', str(out), TOP], test_distro.BUILD_TIMEOUT)
    return str(out / WHEEL)


@pytest.fixture(scope='module')
def podman(tmp_path_factory):
    pm = Podman(tmp_path_factory.mktemp('podman'))
    yield pm
    shutil.rmtree(pm.path)     # ~2 GiB of layers


@pytest.fixture(scope='module')
def base(podman):
    # the root of tox -e distro (same packages: the same cached root)
    out = run([os.path.join(TOP, 'tools', 'deb', 'distro-root.sh'),
               test_distro.SUITE] + list(test_distro.PACKAGES),
              test_distro.ROOT_TIMEOUT)
    root = out.strip().splitlines()[-1]
    assert os.path.isfile(os.path.join(root, '.tlbb-complete')), out
    # the root is read, never changed (tar reads it; .tlbb-complete is
    # the cache's own marker)
    run(['sh', '-c', 'r=$1; shift; '
         'tar -C "$r" -c --exclude=./.tlbb-complete . | "$@"', 'sh',
         root] + podman.argv('import', '-', BASE), IMPORT_TIMEOUT)
    return BASE


def build(podman, base, wheel, path, text, tag):
    ctx = path / ('ctx-' + tag.rsplit('/', 1)[-1].split(':')[0])
    (ctx / 'plugins').mkdir(parents=True)
    shutil.copy(wheel, ctx / 'plugins')
    (ctx / 'Containerfile').write_text(text % {'base': base,
                                               'venv': KOLLA_VENV})
    return podman('build', '--network=none', '--pull=never', '-t', tag,
                  '-f', str(ctx / 'Containerfile'), str(ctx),
                  timeout=BUILD_TIMEOUT)


def test_nova_compute_image_loads_the_driver(podman, base, wheel,
                                             tmp_path):
    out = build(podman, base, wheel, tmp_path, COMPUTE_FILE, COMPUTE)
    shim = DEBIAN_NOVA + '/virt/tlbbalance/__init__.py'
    # the footer's build-time check: nova finds the shim
    assert 'installed %s' % shim in out, out
    assert '%s (written by this command)' % shim in out, out

    conf = tmp_path / 'nova.conf'
    conf.write_text(NOVA_CONF)
    loader = os.path.join(os.path.dirname(__file__), 'nova_loader.py')
    out = podman.container(
        COMPUTE, KOLLA_VENV + '/bin/python3', '/tmp/nova_loader.py',
        '/etc/nova/nova.conf', user='nova',
        mounts=[(str(conf), '/etc/nova/nova.conf'),
                (loader, '/tmp/nova_loader.py')])
    got = json.loads([ln for ln in out.splitlines()
                      if ln.startswith('{"nova"')][-1])
    print('nova_loader.py in the container: %s' % json.dumps(got, indent=1))
    assert got['nova'].startswith('31.')
    assert got['python'] == KOLLA_VENV + '/bin/python3'
    assert got['compute_driver'] == 'tlbbalance.TLBBalanceLibvirtDriver'
    assert got['loaded'] == DRIVER
    assert got['mro'][1] == 'nova.virt.libvirt.driver.LibvirtDriver'
    assert got['shim'] == shim
    assert got['package'].startswith(KOLLA_VENV + '/lib/python3')
    assert got['bogus'].startswith('Validation failed; tlbbalance:mode')
    out = podman.container(COMPUTE, KOLLA_VENV + '/bin/tlbbalance',
                           '--version', user='nova')
    assert out.splitlines()[-1] == 'tlbbalance %s' % VERSION

    # the provider config, written per host by the generator run in the
    # nova-compute image into the host directory the guide bind-mounts
    # at nova's provider_config_location (nova_compute_extra_volumes)
    # (as root: docker exec -u root; the image's user nova may not
    # write the host's directory, and says so in one line)
    pc = tmp_path / 'provider_config'
    pc.mkdir()
    gen = ('%s/bin/python3 -m nova_tlbbalance.provider_config --output '
           '/etc/nova/provider_config/tlbbalance.yaml --trait CUSTOM_RACK_A'
           % KOLLA_VENV)
    mount = [(str(pc), '/etc/nova/provider_config')]
    out = podman.container(COMPUTE, 'sh', '-c', gen + '; echo "rc=$?"',
                           rw=mount)
    # (stdout and stderr reach podman separately: no order between them)
    lines = out.splitlines()
    assert 'provider_config: cannot write /etc/nova/provider_config/' \
        'tlbbalance.yaml: Permission denied' in lines, out
    assert 'rc=1' in lines and 'Traceback' not in out, out
    out = podman.container(COMPUTE, 'sh', '-c', gen, rw=mount, user='root')
    print(out)
    assert any(ln.startswith('written /etc/nova/provider_config/'
                             'tlbbalance.yaml traits=')
               for ln in out.splitlines()), out
    text = (pc / 'tlbbalance.yaml').read_text()
    assert "schema_version: '1.0'" in text and 'CUSTOM_RACK_A' in text, text


@pytest.fixture(scope='module')
def libvirt_image(podman, base, wheel, tmp_path_factory):
    out = build(podman, base, wheel, tmp_path_factory.mktemp('libvirt'),
                LIBVIRT_FILE, LIBVIRT)
    assert 'installed %s' % HOOK in out, out
    return LIBVIRT


def test_nova_libvirt_image_hook(podman, libvirt_image, tmp_path):
    hook = podman.container(LIBVIRT, 'cat', HOOK)
    lines = hook.splitlines()
    # the image's own interpreter and package, found by the installer
    assert lines[0] == '#!/var/lib/kolla/tlbbalance/bin/python3 -IS', lines
    assert any(ln.startswith("sys.path.insert(0, '/var/lib/kolla/"
                             "tlbbalance/lib/python3") for ln in lines)
    assert "CONF = '/etc/tlbbalance/hook.conf'" in lines

    # the settings bind-mounted from the host as the guide's
    # nova_libvirt_extra_volumes do; syslog off (no /dev/log here),
    # the JSON log to stdout's neighbour stderr only
    settings = tmp_path / 'tlbbalance'
    settings.mkdir()
    (settings / 'hook.conf').write_text('[hook]\nsyslog =\n'
                                        'state_dir = /tmp/tlbbalance\n')
    out = podman.container(
        LIBVIRT, 'sh', '-c', '%s instance-00000001 prepare begin - ; '
        'echo "rc=$?"' % HOOK,
        # strict: a non-strict THP domain's prepare has nothing to do
        # before the start (hook.strictness.prepare_can_wait)
        stdin=TAGGED.replace("strict='false'", "strict='true'"),
        mounts=[(str(settings), '/etc/tlbbalance')])
    print(out)
    assert 'rc=0' in out.splitlines(), out
    assert 'phase=prepare' in out and 'mode=monitor' in out, out
    assert 'result="thp ' in out, out


# In a nova_libvirt container of that image (privileged, as kolla runs
# it): a qemu.conf this machine allows (QEMU as root, no security
# driver, no namespaces, no cgroups: the container has none), virtlogd
# and libvirtd started by hand (kolla's start script does it in kolla's
# image), a tagged TCG domain with no disk defined, started and
# destroyed; the hook's JSON log has each phase libvirtd ran it for.
LIBVIRT_RUN = '''set -e
cat >>/etc/libvirt/qemu.conf <<END
user = "root"
group = "root"
security_driver = "none"
namespaces = []
cgroup_controllers = []
remember_owner = 0
END
mkdir -p /run/libvirt
virtlogd -d
libvirtd -d
# the first capability probe: ~4 s here, 12-18 s under load; bound 180 s
i=0
until virsh -c qemu:///system version >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -le 180 ] || { echo "libvirtd did not answer in 180 s"; exit 1; }
    sleep 1
done
virsh -c qemu:///system define /w/dom.xml
virsh -c qemu:///system start instance-00000001
virsh -c qemu:///system domstate instance-00000001
virsh -c qemu:///system destroy instance-00000001
virsh -c qemu:///system undefine instance-00000001
cat /tmp/tlbbalance-hook.jsonl
'''

DOMAIN = '''<domain type='qemu'>
  <name>instance-00000001</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <metadata>
    <tlbbalance:policy
        xmlns:tlbbalance='http://openstack.org/xmlns/tlbbalance/1.0'
        mode='monitor' backing='thp' strict='false'/>
  </metadata>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <devices><emulator>/usr/bin/qemu-system-x86_64</emulator></devices>
</domain>
'''


def test_nova_libvirt_container_starts_a_domain(podman, libvirt_image,
                                                tmp_path):
    w = tmp_path / 'w'
    w.mkdir()
    (w / 'run.sh').write_text(LIBVIRT_RUN)
    (w / 'dom.xml').write_text(DOMAIN)
    settings = tmp_path / 'tlbbalance'
    settings.mkdir()
    (settings / 'hook.conf').write_text(
        '[hook]\nsyslog =\nlog_file = /tmp/tlbbalance-hook.jsonl\n')
    out = podman.container(
        LIBVIRT, 'sh', '/w/run.sh', privileged=True,
        mounts=[(str(w), '/w'), (str(settings), '/etc/tlbbalance')])
    print(out)
    assert 'running' in out.splitlines(), out
    phases = [json.loads(ln) for ln in out.splitlines()
              if ln.startswith('{"domain"')]
    # prepare skipped (not strict, THP): started checks the host's THP
    assert [(p['phase'], p['rc']) for p in phases] == [
        ('started', 0), ('stopped', 0), ('release', 0)], phases
    assert phases[0]['host_thp'].startswith('thp '), phases[0]
    # the QEMU process, its vCPU thread and its RAM found; this host
    # kernel has no module support, so the VM is not registered
    started = phases[0]
    assert started['vcpus'] == 1 and started['ranges'] == 1, started
    assert started['result'] == 'module absent: not registered', started
