# SPDX-License-Identifier: Apache-2.0
"""tlbbalance.ko for one kernel: the one build of the module for tests.

The in-kernel tests (run-kernels.sh, through ``python3 -m kernels.boot
build-module``) and the node in a box (tools/node/node.py) both load what
this builds: ``kernel-module/`` copied (without its tests and objects) to a
directory of the caller's, ``make KDIR=<headers> W=1`` (cross-built for an
arm64 kernel), and any ``warning:`` or ``error:`` line in the build log is
a failure.  A module built from the same sources for the same kernel ABI
with the same compiler is taken from the cache
(``<cache>/kmod-builds/<abi>/<key>``; the three newest per ABI are kept).
"""

import hashlib
import os
import re
import shutil
import struct
import subprocess
import tempfile

from .kernel import BootError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SOURCE = os.path.join(REPO, 'kernel-module')
# Not part of the module's sources: its tests, objects of earlier builds.
_SKIP_DIRS = {'tests', os.path.join('core', 'build')}
_SKIP_FILES = re.compile(r'(\.o|\.ko|\.mod|\.mod\.c)$|^\..*\.cmd$|'
                         r'^(modules\.order|Module\.symvers)$')
_WARNING = re.compile(r'(warning|error):', re.I)
KEEP = 3


class ModuleBuildError(BootError):
    """tlbbalance.ko did not build, or built with warnings; says which."""


def default_cache():
    """$TLBB_CACHE, else $XDG_CACHE_HOME or ~/.cache, /nova-tlbbalance."""
    return os.environ.get('TLBB_CACHE') or os.path.join(
        os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'),
        'nova-tlbbalance')


def sources(src=SOURCE):
    """The module's source files, relative to src, sorted."""
    out = []
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        dirs[:] = [d for d in dirs if os.path.normpath(
            os.path.join(rel, d)) not in _SKIP_DIRS]
        out += [os.path.normpath(os.path.join(rel, f)) for f in files
                if not _SKIP_FILES.search(f)]
    return sorted(out)


def make_args(kernel):
    """make's arguments besides KDIR and W=1 for kernel's architecture."""
    if kernel.arch == 'arm64':
        return ['ARCH=arm64', 'CROSS_COMPILE=aarch64-linux-gnu-']
    return []


def _compiler_version(kernel):
    root = build_root(kernel)
    if root:    # the root's compiler: the root as made (remade: rebuilt)
        with open(os.path.join(root, '.complete'), 'rb') as f:
            return f.read() + b'%d' % os.stat(
                os.path.join(root, '.complete')).st_mtime
    cc = 'aarch64-linux-gnu-gcc' if kernel.arch == 'arm64' else 'gcc'
    try:
        return subprocess.run([cc, '--version'], stdout=subprocess.PIPE,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise ModuleBuildError('%s --version: %s (a compiler for %s '
                               'modules is needed)' % (cc, e, kernel.arch))


def cache_key(kernel, src=SOURCE):
    """What decides the module: its sources, the kernel ABI, the compiler
    and make's arguments."""
    h = hashlib.sha256()
    for rel in sources(src):
        path = os.path.join(src, rel)
        h.update(rel.encode() + b'\0%o\0' % (os.stat(path).st_mode & 0o777))
        with open(path, 'rb') as f:
            h.update(f.read())
    h.update(kernel.abi.encode() + b'\0' + _compiler_version(kernel) +
             ' '.join(make_args(kernel)).encode())
    return h.hexdigest()[:16]


def package_version(src=SOURCE):
    """dkms.conf's PACKAGE_VERSION: the module's version (Kbuild makes it
    MODULE_VERSION)."""
    path = os.path.join(src, 'dkms.conf')
    with open(path) as f:
        found = re.findall(r'^PACKAGE_VERSION="([^"]*)"$', f.read(), re.M)
    if len(found) != 1:
        raise ModuleBuildError('%s: %d PACKAGE_VERSION="..." lines, not 1'
                               % (path, len(found)))
    return found[0]


def modinfo(ko):
    """The key=value strings of ko's .modinfo section (what modinfo
    prints), as {key: [values]}; a little-endian ELF64 module (x86_64,
    arm64)."""
    with open(ko, 'rb') as f:
        elf = f.read()
    if elf[:6] != b'\x7fELF\x02\x01':
        raise ModuleBuildError('%s: not a little-endian ELF64 file' % ko)
    shoff, = struct.unpack_from('<Q', elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3a)

    def section(i):
        name, _, _, _, off, size = struct.unpack_from(
            '<IIQQQQ', elf, shoff + i * shentsize)
        return name, elf[off:off + size]

    names = section(shstrndx)[1]
    info = {}
    for i in range(shnum):
        name, data = section(i)
        if names[name:names.index(b'\0', name)] == b'.modinfo':
            for item in data.split(b'\0'):
                key, sep, value = item.decode(errors='replace').partition(
                    '=')
                if sep:
                    info.setdefault(key, []).append(value)
    return info


def check_version(ko, src=SOURCE):
    """ko's MODULE_VERSION is dkms.conf's PACKAGE_VERSION, else raise. A
    tree without dkms.conf is not checked (the real one does not build
    without it: its Kbuild reads the version there)."""
    if not os.path.exists(os.path.join(src, 'dkms.conf')):
        return None
    want = package_version(src)
    got = modinfo(ko).get('version')
    if got != [want]:
        raise ModuleBuildError('%s: modinfo version %s, dkms.conf says %s'
                               % (ko, got, want))
    return want


def _copy_sources(src, dest):
    shutil.rmtree(dest, ignore_errors=True)
    for rel in sources(src):
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(os.path.join(src, rel), os.path.join(dest, rel))


def _store(cached, ko, log):
    """Put ko and its log in the cache (atomically), keep the KEEP newest
    builds of that ABI."""
    parent = os.path.dirname(cached)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix='.new-')
    os.chmod(tmp, 0o755)
    shutil.copy2(ko, os.path.join(tmp, 'tlbbalance.ko'))
    shutil.copy2(log, os.path.join(tmp, 'build.log'))
    try:
        os.rename(tmp, cached)
    except OSError:     # another build stored the same key meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    olds = sorted((os.path.join(parent, d) for d in os.listdir(parent)
                   if not d.startswith('.')),
                  key=os.path.getmtime, reverse=True)
    for old in olds[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


def build_root(kernel):
    """The root fetch.sh named for building kernel's modules (the host
    cannot run that kernel's kbuild: sid's 7.x), or None."""
    try:
        with open(os.path.join(kernel.dir, 'buildroot')) as f:
            root = f.read().strip()
    except OSError:
        return None
    if not os.path.isdir(os.path.join(root, 'usr')):
        raise ModuleBuildError('%s/buildroot names %r, which is no root: '
                               'rerun tools/kernels/fetch.sh %s'
                               % (kernel.dir, root, kernel.line or ''))
    return root


def in_root(root, dirs, argv):
    """argv run chrooted in root, in a private mount namespace where each
    of dirs is bind-mounted at its own path (so paths need no rewriting),
    and /proc and /dev are there for the compiler."""
    binds = ' '.join(
        'mkdir -p "$R%s" && mount --bind "%s" "$R%s" &&' % (d, d, d)
        for d in dirs)
    script = ('R="$1"; shift; %s mount -t proc proc "$R/proc" && '
              'mount --rbind /dev "$R/dev" && exec chroot "$R" "$@"' % binds)
    return ['unshare', '-m', '--propagation', 'private', 'sh', '-c', script,
            'in-root', root] + argv


def build_module(kernel, out_dir, cache=None, rebuild=False, src=SOURCE,
                 jobs=None, say=None):
    """tlbbalance.ko for kernel (a :class:`kernels.boot.Kernel`) in
    out_dir (its sources in out_dir/module, the make output in
    out_dir/module-build.log); returns the module's path.  say(msg) is
    told when the cached module is reused.  Raises ModuleBuildError naming
    the log when make fails or warns."""
    say = say or (lambda msg: None)
    if not os.path.exists(os.path.join(src, 'Makefile')):
        raise ModuleBuildError('no %s/Makefile: tlbbalance.ko cannot be '
                               'built' % src)
    build = os.path.join(out_dir, 'module')
    log = os.path.join(out_dir, 'module-build.log')
    os.makedirs(out_dir, exist_ok=True)
    _copy_sources(src, build)
    cached = os.path.join(cache or default_cache(), 'kmod-builds',
                          kernel.abi, cache_key(kernel, src))
    ko = os.path.join(build, 'tlbbalance.ko')
    if os.path.exists(os.path.join(cached, 'tlbbalance.ko')) and \
            not rebuild:
        shutil.copy2(os.path.join(cached, 'tlbbalance.ko'), ko)
        shutil.copy2(os.path.join(cached, 'build.log'), log)
        say('tlbbalance.ko unchanged since an earlier build: reused (%s)'
            % cached)
        check_version(ko, src)
        return ko
    argv = ['make', '-C', build, '-j%d' % (jobs or os.cpu_count() or 1),
            'KDIR=' + kernel.headers, 'W=1'] + make_args(kernel)
    root = build_root(kernel)
    if root:
        argv = in_root(root, [os.path.realpath(kernel.dir), build], argv)
    with open(log, 'w') as f:
        rc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL).returncode
    with open(log, errors='replace') as f:
        lines = f.read().splitlines()
    if rc != 0:
        raise ModuleBuildError('module build failed for %s (make rc=%d, %s)'
                               ':\n%s' % (kernel.abi, rc, log,
                                          '\n'.join(lines[-40:])))
    warnings = [ln for ln in lines if _WARNING.search(ln)]
    if warnings:
        raise ModuleBuildError('module build warnings for %s (%s):\n%s'
                               % (kernel.abi, log, '\n'.join(warnings)))
    if not os.path.exists(ko):
        raise ModuleBuildError('make succeeded but built no %s' % ko)
    check_version(ko, src)
    _store(cached, ko, log)
    return ko
