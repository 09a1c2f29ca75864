# SPDX-License-Identifier: Apache-2.0
"""Client for the kernel module's configfs interface.

The interface is documented in ``docs/kernel-module.md`` (section
"configfs"); attribute names for tunables and statistics, the limits and
the mode names come from :mod:`nova_tlbbalance.module_defs` and
:mod:`nova_tlbbalance.module_iface` (the module's
``.def`` files), never from here.

The configfs root is a parameter: ``TLBB_CONFIGFS`` in the environment, or
the ``root`` argument, default ``/sys/kernel/config/tlbbalance``.
Only the standard library is used (the libvirt hook imports this).
"""

import errno
import functools
import os
import re

from nova_tlbbalance import module_iface
from nova_tlbbalance.shown import shown

DEFAULT_ROOT = '/sys/kernel/config/tlbbalance'
ENV_ROOT = 'TLBB_CONFIGFS'
NAME_CHARS = 'A-Za-z0-9._-'


@functools.lru_cache(maxsize=None)
def _name_re():
    return re.compile(r'^[%s]{1,%d}$'
                      % (NAME_CHARS, module_iface.limit('NAME_MAX')))


def valid_name(name):
    """Whether ``name`` is a valid VM directory name for the module:
    1 to NAME_MAX of NAME_CHARS, and neither ``.`` nor ``..`` (which
    would name vms/ itself or the configfs root)."""
    return bool(name) and name not in ('.', '..') and \
        bool(_name_re().match(name))


def store_max():
    """The module refuses a store of this many bytes or more
    (``TLBB_STORE_MAX``, ``PAGE_SIZE - 1`` in kernel-module/tlbb_configfs.c:
    configfs hands a store at most one page, so a store that long may have
    been cut)."""
    return os.sysconf('SC_PAGE_SIZE') - 1


def tid_writes(tids, limit=None):
    """The ``vcpu_tids`` writes for ``tids``: the first replaces the list,
    each later one starts with ``+`` (the module's append form); every
    write is shorter than ``limit`` (default :func:`store_max`)."""
    limit = limit or store_max()
    writes, cur, prefix, size = [], [], '', 0
    for t in tids:
        word = str(int(t))
        # size of prefix + cur joined by spaces + ' ' + word
        if cur and size + 1 + len(word) >= limit:
            writes.append(prefix + ' '.join(cur))
            cur, prefix = [], '+'
        size = (size + 1 if cur else len(prefix)) + len(word)
        cur.append(word)
    writes.append(prefix + ' '.join(cur))
    return writes


class ModuleAbsent(Exception):
    """The module's configfs directory is not there (module not loaded)."""


class ModuleError(Exception):
    """A write to the module was refused; names the attribute and errno,
    and for a refused ``commit`` the culprit the module named
    (``detail``, e.g. ``ranges: outside the process's mappings``)."""

    def __init__(self, path, err, value=None, detail=None):
        self.path = path
        self.errno = err
        self.value = value
        self.detail = detail
        super().__init__('%s: write %s refused: %s (%s)%s' % (
            path, shown(value), os.strerror(err),
            errno.errorcode.get(err, err),
            ': %s' % detail if detail else ''))


def root_dir(root=None):
    return root or os.environ.get(ENV_ROOT) or DEFAULT_ROOT


def vm_dir_name(name, uuid):
    """The VM's directory name: the domain name when it fits the module's
    name rule, else its UUID (36 characters of hex and dashes)."""
    if valid_name(name):
        return name
    if valid_name(uuid):
        return uuid
    raise ValueError('domain %r: neither its name nor its uuid %r is a valid '
                     'tlbbalance VM name ([%s]{1,%d})'
                     % (name, uuid, NAME_CHARS,
                        module_iface.limit('NAME_MAX')))


def format_ranges(ranges):
    """``[(hva, length, gpa), ...]`` -> the ``ranges`` attribute text."""
    most = module_iface.limit('MAX_RANGES')
    if len(ranges) > most:
        raise ValueError('%d guest RAM ranges; the module takes at most %d'
                         % (len(ranges), most))
    return ''.join('0x%x 0x%x 0x%x\n' % (hva, length, gpa)
                   for hva, length, gpa in ranges)


class Client:
    """One configfs tree of the tlbbalance module."""

    def __init__(self, root=None):
        self.root = root_dir(root)

    # -- plumbing ----------------------------------------------------------

    def present(self):
        return os.path.isdir(os.path.join(self.root, 'vms'))

    def usable(self):
        """(usable, why): whether the module can take registrations: its
        configfs root has ``vms/`` and a numeric interface ``version``. A
        module loaded without configfs mounted, or whose interface cannot
        be read, takes no VM: broken counts as absent. The one test behind
        the strict precondition and the CUSTOM_TLBBALANCE_MODULE trait."""
        if not self.present():
            return False, ('the tlbbalance kernel module is not loaded (%s)'
                           % self.root)
        try:
            version = self._read(os.path.join(self.root, 'version')).strip()
        except OSError as exc:
            return False, ('the tlbbalance kernel module is loaded (%s) but '
                           'its interface version cannot be read: %s'
                           % (self.root, exc))
        if not version.isdigit():
            return False, ('the tlbbalance kernel module is loaded (%s) but '
                           'its interface version %r is not a number'
                           % (self.root, version[:40]))
        return True, ('the tlbbalance kernel module is loaded (%s), '
                      'interface version %s' % (self.root, version))

    def _need(self):
        if not self.present():
            raise ModuleAbsent('tlbbalance module not loaded: %s/vms does '
                               'not exist' % self.root)

    def _vm(self, vm):
        if not valid_name(vm):
            raise ValueError('invalid tlbbalance VM name %r' % vm)
        return os.path.join(self.root, 'vms', vm)

    def _write(self, path, value):
        # One write() call: configfs attributes take the whole value at once.
        data = value.encode()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        except OSError as exc:
            raise ModuleError(path, exc.errno, value) from None
        try:
            os.write(fd, data if data else b'\n')
        except OSError as exc:
            raise ModuleError(path, exc.errno, value) from None
        finally:
            os.close(fd)

    @staticmethod
    def _read(path):
        with open(path) as f:
            return f.read()

    # -- API ---------------------------------------------------------------

    def version(self):
        self._need()
        return self._read(os.path.join(self.root, 'version')).strip()

    def vms(self):
        """Names of the registered VM directories."""
        if not self.present():
            return []
        return sorted(os.listdir(os.path.join(self.root, 'vms')))

    def exists(self, vm):
        return os.path.isdir(self._vm(vm))

    def _transaction(self, vm, values):
        """One staged transaction on ``vm``'s directory: ``stage``, each
        ``(attribute, text)`` of ``values`` (only staged), then
        ``commit``, which checks all of it and applies what was written at
        once, or refuses naming the culprit (:class:`ModuleError` with
        ``detail``); any refusal aborts the stage, so the VM is left as it
        was. The stage is this thread's own (the module keeps one per
        writer), see docs/kernel-module.md, "Registration"."""
        d = self._vm(vm)
        commit = os.path.join(d, 'commit')
        if os.path.isdir(d) and not os.path.exists(commit):
            raise ModuleError(
                commit, errno.EOPNOTSUPP, 'stage',
                'tlbbalance.ko is older than staged registration (no '
                'commit attribute): upgrade the module')
        self._write(commit, 'stage')
        try:
            for name, text in values:
                self._write(os.path.join(d, name), text)
            try:
                self._write(commit, 'commit')
            except ModuleError as exc:
                raise ModuleError(commit, exc.errno, 'commit',
                                  self.commit_result(vm)) from None
        except BaseException:
            try:
                self._write(commit, 'abort')
            except ModuleError:
                pass        # nothing staged any more (VM gone): fine
            raise
        return d

    @staticmethod
    def _param_values(params):
        from nova_tlbbalance import module_defs     # only when changing
        return [(name, str(module_defs.param(name).check(value)))
                for name, value in (params or {}).items()]

    @staticmethod
    def _check_mode(mode):
        if mode not in module_iface.mode_names():
            raise ValueError('mode %r: allowed %s'
                             % (mode, ', '.join(module_iface.mode_names())))

    def register(self, vm, pid, vcpu_tids, ranges, mode='monitor',
                 params=None):
        """Create (or re-use) the VM's directory and register it, as one
        staged transaction: ``stage``, pid, vcpu_tids, ranges, params and
        mode (only staged), then ``commit``, which checks all of it and
        applies it at once or refuses naming the culprit
        (:class:`ModuleError` with ``detail``; the stage is then aborted,
        the VM left as it was). ``params``: name -> int, written only for
        the names given (the VM keeps its values otherwise). Of an
        already registered VM the module redoes only what changed.

        Staged registration is the only protocol this client speaks: a
        module without the ``commit`` attribute is refused
        (:class:`ModuleError`, EOPNOTSUPP), see docs/kernel-module.md,
        "Registration".
        """
        param_values = self._param_values(params)   # before any write
        self._check_mode(mode)
        most = module_iface.limit('MAX_VCPUS')
        if len(vcpu_tids) > most:
            raise ValueError('%d vCPU threads; the module takes at most %d'
                             % (len(vcpu_tids), most))
        text_ranges = format_ranges(ranges)
        self._need()
        d = self._vm(vm)
        try:
            os.mkdir(d)
        except FileExistsError:
            pass
        except OSError as exc:
            raise ModuleError(d, exc.errno, 'mkdir') from None
        values = [('pid', str(int(pid)))]
        # one write of all tids can exceed a page (~512+ vCPUs): append
        values += [('vcpu_tids', text) for text in tid_writes(vcpu_tids)]
        values.append(('ranges', text_ranges))
        values += param_values
        values.append(('mode', mode))
        return self._transaction(vm, values)

    def commit_result(self, vm):
        """What the last ``commit`` of ``vm`` did: the module's ``<what>``
        of ``last <errno> <what>``, None when unreadable or none."""
        try:
            text = self._read(os.path.join(self._vm(vm), 'commit'))
        except OSError:
            return None
        for line in text.splitlines():
            parts = line.split(None, 2)
            if len(parts) == 3 and parts[0] == 'last' and parts[2] != '-':
                return parts[2]
        return None

    def change(self, vm, mode=None, params=None):
        """Change a registered VM's mode and/or tunables (name -> int) in
        one staged transaction. Only what is given is written, and the
        module applies only what changed: a tunable goes to the running
        controller, whose limit and hold stay."""
        param_values = self._param_values(params)
        values = list(param_values)
        if mode is not None:
            self._check_mode(mode)
            values.append(('mode', mode))
        self._need()
        self._transaction(vm, values)

    def set_mode(self, vm, mode):
        self.change(vm, mode=mode)

    def stop(self, vm):
        """Switch the VM off (lifts any limit); False if not registered.
        Mode off also cancels any other writer's stage of the VM."""
        if not self.present() or not self.exists(vm):
            return False
        self.set_mode(vm, 'off')
        return True

    def unregister(self, vm):
        """Switch the VM off and remove its directory; False if it was not
        there. (The module refuses rmdir of a monitored or balanced VM with
        EBUSY: only "off" lifts what it holds; it also cancels any stage
        left by another writer, e.g. a registrar killed before its
        commit.)"""
        if not self.present():
            return False
        d = self._vm(vm)
        if os.path.exists(os.path.join(d, 'commit')):
            try:
                self._transaction(vm, [('mode', 'off')])
            except ModuleError as exc:
                if exc.errno != errno.ENOENT:
                    raise
        try:
            os.rmdir(d)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise ModuleError(d, exc.errno, 'rmdir') from None
        return True

    def ranges(self, vm):
        """The VM's guest RAM ranges, ``[(hva, length, gpa), ...]``, or None
        if the VM is absent."""
        try:
            text = self._read(os.path.join(self._vm(vm), 'ranges'))
        except FileNotFoundError:
            return None
        return [tuple(int(f, 0) for f in line.split())
                for line in text.splitlines() if line.strip()]

    def status(self, vm):
        """The VM's ``status`` attribute, typed
        (:class:`nova_tlbbalance.module_status.ModuleStatus`: every stat
        of tlbb_stats.def and param of tlbb_params.def, plus the header:
        mode, pid, inject_enabled, limiter_error, limiter_stuck,
        staging), or None if absent.
        """
        from nova_tlbbalance import module_status
        try:
            return module_status.parse(self._read(
                os.path.join(self._vm(vm), 'status')))
        except FileNotFoundError:
            return None
