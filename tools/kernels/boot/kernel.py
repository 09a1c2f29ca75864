# SPDX-License-Identifier: Apache-2.0
"""A kernel from tools/kernels/fetch.sh's cache and its module resolver."""

import os
import subprocess

TOOLS_KERNELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCHES = ('amd64', 'arm64')


class BootError(Exception):
    """A kernel, module or initramfs could not be had; says which."""


class Kernel:
    """One fetched kernel line: its image, modules and busybox."""

    def __init__(self, line, arch='amd64', dir=None):
        if arch not in ARCHES:
            raise BootError('arch must be one of %s, not %r'
                            % (', '.join(ARCHES), arch))
        if dir is None:
            dir = self._fetch(line, arch)
        self.dir = dir
        self.line = line
        with open(os.path.join(dir, 'abi')) as f:
            self.abi = f.read().strip()
        try:
            with open(os.path.join(dir, 'arch')) as f:
                self.arch = f.read().strip()
        except OSError:
            self.arch = 'amd64'
        # x86: PVH boot of the ELF vmlinux; arm64: the Image as shipped.
        self.image = os.path.join(
            dir, 'vmlinux' if self.arch == 'amd64' else 'vmlinuz')
        self.vmlinux = os.path.join(dir, 'vmlinux')
        self.headers = os.path.realpath(os.path.join(dir, 'headers'))
        self.modules = os.path.realpath(os.path.join(dir, 'modules'))
        if not os.path.exists(os.path.join(self.modules, 'modules.dep')):
            raise BootError('no %s/modules.dep: rerun tools/kernels/fetch.sh'
                            % self.modules)

    @classmethod
    def from_dir(cls, dir):
        """A kernel already fetched (the directory fetch.sh printed)."""
        return cls(None, dir=dir)

    @staticmethod
    def _fetch(line, arch):
        fetch = os.path.join(TOOLS_KERNELS, 'fetch.sh')
        p = subprocess.run([fetch, line, arch], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode != 0:
            raise BootError('fetching the %s %s kernel failed (rc=%d): %s\n'
                            '%s' % (line, arch, p.returncode, fetch,
                                    p.stderr[-3000:]))
        return p.stdout.strip().splitlines()[-1]

    def busybox(self):
        """A static busybox for this kernel's architecture: the one
        fetch.sh put beside an arm64 kernel, else the host's."""
        own = os.path.join(self.dir, 'busybox')
        if os.access(own, os.X_OK):
            return own
        path = None
        for d in os.environ.get('PATH', '/usr/bin:/bin').split(':') + \
                ['/bin']:
            if os.access(os.path.join(d, 'busybox'), os.X_OK):
                path = os.path.join(d, 'busybox')
                break
        if path is None:
            raise BootError('busybox not found (apt-get install '
                            'busybox-static)')
        with open(path, 'rb') as f:
            head = f.read(1 << 14)
        if b'ld-linux' in head:
            raise BootError('%s is dynamically linked (apt-get install '
                            'busybox-static)' % path)
        return path

    def module_deps(self, names):
        """Paths (relative to self.modules) of names and everything they
        need, dependencies first, each once; a name built into the kernel
        needs nothing.  Names may use - or _."""
        deps = {}
        by_name = {}
        with open(os.path.join(self.modules, 'modules.dep')) as f:
            for line in f:
                mod, _, rest = line.partition(':')
                deps[mod] = rest.split()
                by_name[_key(mod)] = mod
        builtin = set()
        try:
            with open(os.path.join(self.modules, 'modules.builtin')) as f:
                builtin = {_key(line.strip()) for line in f}
        except OSError:
            pass
        order = []

        def visit(mod):
            if mod in order:
                return
            # modules.dep lists the deps of deps too; modprobe loads the
            # last one first.
            for dep in reversed(deps.get(mod, ())):
                visit(dep)
            order.append(mod)
        for name in names:
            key = _key(name)
            if key in by_name:
                visit(by_name[key])
            elif key not in builtin:
                raise BootError('module %s not in %s/modules.dep'
                                % (name, self.modules))
        return order


def _key(path):
    """kernel/arch/x86/kvm/kvm-amd.ko.xz -> kvm_amd."""
    return os.path.basename(path).split('.ko')[0].replace('-', '_')
