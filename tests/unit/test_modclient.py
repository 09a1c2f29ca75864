# SPDX-License-Identifier: Apache-2.0
"""modclient against a directory tree standing in for configfs.

UNIT TEST ONLY: the tlbbalance module cannot be loaded on this host, so a
temporary directory plays /sys/kernel/config/tlbbalance (files the module
would create are pre-created). The real module's configfs is exercised by
tests/e2e inside a booted Debian kernel.
"""

import errno
import os
import re

import pytest

from nova_tlbbalance import modclient
from nova_tlbbalance import module_defs

from fake_module import fake_module_tree


def fake_tree(tmp_path, vms=('vm1',), commit=True):
    """``commit=False``: a module older than staged registration."""
    return fake_module_tree(tmp_path / 'tlbbalance', vms, commit)


def record_writes(monkeypatch, refuse=None):
    """Every write modclient makes, as (attribute, value); ``refuse``:
    {(attribute, value): errno} writes to fail as the module would.
    Writes to ``commit`` are taken and not stored (the module's file
    reads its state, not what was written)."""
    seen = []
    real = modclient.Client._write

    def write(self, path, value):
        attr = os.path.basename(path)
        seen.append((attr, value))
        err = (refuse or {}).get((attr, value))
        if err:
            raise modclient.ModuleError(path, err, value)
        if attr != 'commit':
            real(self, path, value)
    monkeypatch.setattr(modclient.Client, '_write', write)
    return seen


RANGES = [(0x7f0000000000, 0x10000000, 0),
          (0x7f0010000000, 0x8000000, 0x100000000)]
RANGES_TEXT = ('0x7f0000000000 0x10000000 0x0\n'
               '0x7f0010000000 0x8000000 0x100000000\n')


def test_register_is_one_staged_commit(tmp_path, monkeypatch):
    """Stage, every value, then one commit: the module applies them all
    at once (no half-registered VM, no order to get wrong)."""
    seen = record_writes(monkeypatch)
    c = modclient.Client(str(fake_tree(tmp_path)))
    c.register('vm1', 1234, [11, 12], RANGES, mode='balance',
               params={'imbalance_threshold': 30})
    assert seen == [('commit', 'stage'), ('pid', '1234'),
                    ('vcpu_tids', '11 12'), ('ranges', RANGES_TEXT),
                    ('imbalance_threshold', '30'), ('mode', 'balance'),
                    ('commit', 'commit')]


def test_refused_commit_names_the_culprit_and_aborts(tmp_path,
                                                     monkeypatch):
    root = fake_tree(tmp_path)
    # what the module's commit file reads after refusing (t_commit)
    (root / 'vms/vm1/commit').write_text(
        'staging\nlast -14 ranges: outside the process\'s mappings\n')
    seen = record_writes(monkeypatch, {('commit', 'commit'): errno.EFAULT})
    c = modclient.Client(str(root))
    with pytest.raises(modclient.ModuleError) as ei:
        c.register('vm1', 1234, [11], RANGES)
    assert ei.value.errno == errno.EFAULT
    assert ei.value.detail == "ranges: outside the process's mappings"
    assert str(ei.value).endswith(
        "(EFAULT): ranges: outside the process's mappings")
    assert seen[-2:] == [('commit', 'commit'), ('commit', 'abort')]


def test_refused_staged_write_aborts(tmp_path, monkeypatch):
    seen = record_writes(monkeypatch, {('ranges', RANGES_TEXT):
                                       errno.EINVAL})
    c = modclient.Client(str(fake_tree(tmp_path)))
    with pytest.raises(modclient.ModuleError, match='ranges.*EINVAL'):
        c.register('vm1', 1234, [11], RANGES)
    assert seen[-1] == ('commit', 'abort')
    assert ('commit', 'commit') not in seen


def test_module_without_commit_is_refused(tmp_path, monkeypatch):
    """Staged registration is the only protocol: a module without the
    ``commit`` attribute (older than it) is refused before any write,
    naming the cause, never registered write by write."""
    seen = record_writes(monkeypatch)
    c = modclient.Client(str(fake_tree(tmp_path, commit=False)))
    with pytest.raises(modclient.ModuleError) as ei:
        c.register('vm1', 1234, [11, 12], RANGES, mode='monitor')
    assert ei.value.errno == errno.EOPNOTSUPP
    assert 'older than staged registration' in str(ei.value)
    with pytest.raises(modclient.ModuleError, match='older than staged'):
        c.stop('vm1')
    assert seen == []


def test_change_stop_unregister_are_staged_transactions(tmp_path,
                                                        monkeypatch):
    """Changing a tunable or the mode, stopping and unregistering: each
    one stage ... commit of only what changes (the module then redoes
    only that: a tunable keeps the limit and the hold), never a plain
    write; ``off`` is what cancels a stage a dead registrar left."""
    seen = record_writes(monkeypatch)
    root = fake_tree(tmp_path)
    c = modclient.Client(str(root))
    c.change('vm1', params={'interval_ms': 50})
    assert seen == [('commit', 'stage'), ('interval_ms', '50'),
                    ('commit', 'commit')]
    del seen[:]
    c.change('vm1', mode='balance', params={'samples': 2})
    assert seen == [('commit', 'stage'), ('samples', '2'),
                    ('mode', 'balance'), ('commit', 'commit')]
    del seen[:]
    c.set_mode('vm1', 'monitor')
    assert c.stop('vm1') is True
    assert seen == [('commit', 'stage'), ('mode', 'monitor'),
                    ('commit', 'commit'),
                    ('commit', 'stage'), ('mode', 'off'),
                    ('commit', 'commit')]
    del seen[:]
    real_rmdir = os.rmdir

    def rmdir(path):    # configfs's rmdir takes the attributes along
        for f in os.listdir(path):
            os.unlink(os.path.join(path, f))
        real_rmdir(path)
    monkeypatch.setattr(modclient.os, 'rmdir', rmdir)
    assert c.unregister('vm1') is True
    assert seen == [('commit', 'stage'), ('mode', 'off'),
                    ('commit', 'commit')]
    assert not (root / 'vms/vm1').exists()
    assert c.unregister('vm1') is False
    with pytest.raises(ValueError, match='mode'):
        c.change('vm1', mode='fast')
    with pytest.raises(KeyError, match='no_such_knob'):
        c.change('vm1', params={'no_such_knob': 1})


def test_refused_change_aborts_and_names_the_culprit(tmp_path,
                                                     monkeypatch):
    root = fake_tree(tmp_path)
    (root / 'vms/vm1/commit').write_text(
        'staging\nlast -3 pid: the registered process has exited\n')
    seen = record_writes(monkeypatch, {('commit', 'commit'): errno.ESRCH})
    c = modclient.Client(str(root))
    with pytest.raises(modclient.ModuleError) as ei:
        c.set_mode('vm1', 'balance')
    assert ei.value.detail == 'pid: the registered process has exited'
    assert seen[-1] == ('commit', 'abort')


def test_absent(tmp_path):
    c = modclient.Client(str(tmp_path / 'nothing'))
    assert not c.present()
    assert c.vms() == []
    with pytest.raises(modclient.ModuleAbsent, match='not loaded'):
        c.register('vm1', 1, [2], [(0x200000, 0x200000, 0)])
    assert c.stop('vm1') is False
    assert c.unregister('vm1') is False


def test_root_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv('TLBB_CONFIGFS', str(tmp_path))
    assert modclient.Client().root == str(tmp_path)
    monkeypatch.delenv('TLBB_CONFIGFS')
    assert modclient.Client().root == modclient.DEFAULT_ROOT


def test_register_writes_every_attribute(tmp_path):
    root = fake_tree(tmp_path)
    c = modclient.Client(str(root))
    assert c.version() == '1'
    d = c.register('vm1', 1234, [11, 12],
                   [(0x7f0000000000, 0x10000000, 0),
                    (0x7f0010000000, 0x8000000, 0x100000000)],
                   mode='balance', params={'imbalance_threshold': 30})
    d = os.path.join(str(root), 'vms', 'vm1')
    assert open(d + '/pid').read() == '1234'
    assert open(d + '/vcpu_tids').read() == '11 12'
    assert open(d + '/ranges').read() == (
        '0x7f0000000000 0x10000000 0x0\n'
        '0x7f0010000000 0x8000000 0x100000000\n')
    assert open(d + '/imbalance_threshold').read() == '30'
    assert open(d + '/mode').read() == 'balance'
    assert c.vms() == ['vm1']


def test_bad_param_refused_before_any_write(tmp_path):
    root = fake_tree(tmp_path)
    c = modclient.Client(str(root))
    with pytest.raises(KeyError, match='no_such_knob'):
        c.register('vm1', 1, [2], [], params={'no_such_knob': 1})
    p = module_defs.param('samples')
    with pytest.raises(ValueError, match='samples'):
        c.register('vm1', 1, [2], [], params={'samples': p.max + 1})
    assert open(str(root / 'vms/vm1/pid')).read() == ''


def test_write_refused_names_attribute_and_errno(tmp_path):
    root = fake_tree(tmp_path)
    os.unlink(str(root / 'vms/vm1/ranges'))
    os.mkdir(str(root / 'vms/vm1/ranges'))     # write() -> EISDIR
    c = modclient.Client(str(root))
    with pytest.raises(modclient.ModuleError) as ei:
        c.register('vm1', 1, [2], [(0x200000, 0x200000, 0)])
    assert ei.value.errno == errno.EISDIR
    assert 'vms/vm1/ranges' in str(ei.value)
    assert 'EISDIR' in str(ei.value)


def test_limits_and_names(tmp_path):
    c = modclient.Client(str(fake_tree(tmp_path)))
    with pytest.raises(ValueError, match='at most 64'):
        c.register('vm1', 1, [2], [(i << 21, 1 << 21, i << 21)
                                   for i in range(65)])
    with pytest.raises(ValueError, match='mode'):
        c.register('vm1', 1, [2], [], mode='fast')
    with pytest.raises(ValueError, match='invalid tlbbalance VM name'):
        c.status('../etc')
    assert modclient.vm_dir_name('instance-0001', 'u') == 'instance-0001'
    uuid = '8700de68-5f03-4b08-add1-b64dbaea62f9'
    assert modclient.vm_dir_name('my vm/1', uuid) == uuid
    with pytest.raises(ValueError, match='neither its name'):
        modclient.vm_dir_name('a b', 'c d')


def test_dot_names_are_not_vm_names(tmp_path):
    """`.` and `..` are made of allowed characters, but as a directory
    name under vms/ `..` is the module's configfs root: refused, and a
    domain so named registers under its UUID."""
    c = modclient.Client(str(fake_tree(tmp_path)))
    for name in ('.', '..'):
        assert not modclient.valid_name(name)
        with pytest.raises(ValueError, match='invalid tlbbalance VM name'):
            c.status(name)
    for name in ('...', '.vm', 'vm.', 'a..b'):
        assert modclient.valid_name(name), name
    uuid = '8700de68-5f03-4b08-add1-b64dbaea62f9'
    assert modclient.vm_dir_name('..', uuid) == uuid
    assert modclient.vm_dir_name('.', uuid) == uuid


def test_stop_status_unregister(tmp_path):
    root = fake_tree(tmp_path, vms=('vm1', 'empty'))
    (root / 'vms/vm1/status').write_text(
        'huge_pages 12\nstate exited\nmode monitor\npid 99\n')
    c = modclient.Client(str(root))
    assert c.stop('vm1') is True
    assert open(str(root / 'vms/vm1/mode')).read() == 'off'
    assert c.stop('gone') is False
    st = c.status('vm1')
    assert st == {'huge_pages': 12, 'state': 'exited', 'mode': 'monitor',
                  'pid': 99}
    assert (st.pid, st.mode, st.problems) == (99, 'monitor', [])
    assert c.status('gone') is None
    # no attributes (configfs took them at rmdir): nothing to stage
    for f in os.listdir(str(root / 'vms/empty')):
        os.unlink(str(root / 'vms/empty' / f))
    assert c.unregister('empty') is True
    assert c.unregister('empty') is False
    with pytest.raises(modclient.ModuleError, match='rmdir'):
        c.unregister('vm1')      # a plain dir with files: ENOTEMPTY


REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def module_source(name):
    with open(os.path.join(REPO, 'kernel-module', name)) as f:
        return f.read()


def fake_vcpu_tids_store(tmp_path, monkeypatch):
    """The module's vcpu_tids store, modelled on tlbb_vm_vcpu_tids_store()
    (a plain file cannot refuse a long write nor append on '+'): a write of
    store_max() bytes or more is refused with ERANGE, a leading '+'
    appends, anything else replaces. Returns (tid list, writes seen)."""
    state = {'tids': [], 'writes': []}
    real = modclient.Client._write

    def write(self, path, value):
        if not path.endswith('/vcpu_tids'):
            return real(self, path, value)
        state['writes'].append(value)
        if len(value.encode()) >= modclient.store_max():
            raise modclient.ModuleError(path, errno.ERANGE, value)
        append = value.startswith('+')
        tids = [int(t) for t in value.lstrip('+').split()]
        state['tids'] = (state['tids'] if append else []) + tids
    monkeypatch.setattr(modclient.Client, '_write', write)
    return state


def test_many_vcpus_register_by_appends(tmp_path, monkeypatch):
    """1024 seven-digit tids are ~8 KiB: more than one store."""
    state = fake_vcpu_tids_store(tmp_path, monkeypatch)
    c = modclient.Client(str(fake_tree(tmp_path)))
    tids = [4000000 + 3 * i for i in range(module_defs.limit('MAX_VCPUS'))]
    c.register('vm1', 1234, tids, [(0x200000, 0x200000, 0)])
    assert state['tids'] == tids
    w = state['writes']
    print('%d tids in %d writes of %s bytes'
          % (len(tids), len(w), [len(x) for x in w]))
    assert len(w) >= 2
    assert not w[0].startswith('+')
    assert all(x.startswith('+') for x in w[1:])
    assert all(len(x) < modclient.store_max() for x in w)
    # a later short registration replaces the list (first write has no +)
    c.register('vm1', 1234, [7, 8], [(0x200000, 0x200000, 0)])
    assert state['tids'] == [7, 8]


def test_tid_writes_bounds():
    assert modclient.tid_writes([1, 2, 3], 6) == ['1 2 3']
    assert modclient.tid_writes([1, 2, 3], 5) == ['1 2', '+3']
    assert modclient.tid_writes([12345, 1], 7) == ['12345', '+1']
    assert modclient.tid_writes([]) == ['']
    for limit in (8, 9, 10, 64):
        tids = list(range(1, 300))
        ws = modclient.tid_writes(tids, limit)
        assert all(len(x) < limit for x in ws), (limit, ws)
        got = [int(t) for x in ws for t in x.lstrip('+').split()]
        assert got == tids


def test_limits_and_modes_come_from_the_def_tables():
    """The module's limits and mode names have one home each
    (kernel-module/core/tlbb_limits.def, tlbb_modes.def): tlbb.h builds
    its constants from them, Python reads them, nobody restates them."""
    h = module_source('tlbb.h')
    assert '#include "core/tlbb_limits.def"' in h
    assert '#include "core/tlbb_modes.def"' in h
    assert not re.search(r'#define TLBB_(MAX_RANGES|MAX_VCPUS|NAME_MAX)\b',
                         h)
    assert not re.search(r'TLBB_MODE_(OFF|MONITOR|BALANCE)\s*[,}]', h)
    assert set(module_defs.limits()) == {'NAME_MAX', 'MAX_RANGES',
                                         'MAX_VCPUS'}
    assert module_defs.mode_names()[0] == 'off'
    for path in ('nova_tlbbalance/modclient.py',
                 'nova_tlbbalance/extra_specs.py',
                 'nova_tlbbalance/simulate/engine.py',
                 'kernel-module/tlbb.h', 'kernel-module/tlbb_vm.c'):
        with open(os.path.join(REPO, path)) as f:
            text = f.read()
        assert not re.search(r"""['"]monitor['"]\s*,\s*['"]balance""",
                             text), path
        assert not re.search(r'\b1024\b|\{1,64\}', text), path
    from nova_tlbbalance import extra_specs
    from nova_tlbbalance.simulate import engine
    assert extra_specs.MODES == engine.CONTROLLERS == \
        module_defs.mode_names()
    with pytest.raises(ValueError, match='at most %d'
                       % module_defs.limit('MAX_VCPUS')):
        modclient.Client('/nonexistent').register(
            'vm1', 1, range(module_defs.limit('MAX_VCPUS') + 1), [])
    assert not modclient.valid_name('x' * (module_defs.limit('NAME_MAX')
                                           + 1))
    c = module_source('tlbb_configfs.c')
    assert re.search(r'#define TLBB_STORE_MAX\s+\(PAGE_SIZE - 1\)', c)
    assert 'if (len >= TLBB_STORE_MAX)' in c
    assert modclient.store_max() == os.sysconf('SC_PAGE_SIZE') - 1
    # the append form store_max() is written for
    assert "if (*p == '+') {" in c and 'append = true;' in c


# The C tests: the in-guest tests and their library (kernel-module/tests),
# and the controller core's tests (kernel-module/core/tests).
C_TEST_GLOBS = ('kernel-module/tests/*.c', 'kernel-module/tests/guest/*.c',
                'kernel-module/tests/lib/*.[ch]',
                'kernel-module/core/tests/*.[ch]')
# "off" and "monitor" are also values of vms/<vm>/state (tlbb_vm.c, the
# controller's states), which the tests read as such: only the mode names
# that are not states are never written bare.
STATE_NAMES = {'off', 'monitor'}
# A number equal to a bound for another reason: (file, code).
NOT_A_BOUND = {
    # 1000 permille is the whole VM, whatever the bound
    ('kernel-module/core/tests/test_hill.c', '.hill_first_step_pm = 1000;'),
    # DAMON's kdamond state (sysfs), not a tlbbalance mode
    ('kernel-module/tests/guest/t_kvm_heat.c', '"off\\n"'),
}


def c_test_sources():
    """{repo-relative path: text without comments} of every C test."""
    import glob
    out = {}
    for pattern in C_TEST_GLOBS:
        for path in sorted(glob.glob(os.path.join(REPO, pattern))):
            with open(path) as f:
                text = f.read()
            # comments blanked, their newlines kept (line numbers hold)
            text = re.sub(r'/\*.*?\*/|//[^\n]*',
                          lambda m: re.sub(r'[^\n]', ' ', m.group(0)),
                          text, flags=re.S)
            out[os.path.relpath(path, REPO)] = text
    assert out, 'no C test sources under %s' % REPO
    return out


def restated_in_c_tests():
    """Where a C test writes a limit, a mode name or a tunable's bound
    itself instead of taking it from the .def tables."""
    found = []
    limits = module_defs.limits()
    modes = module_defs.mode_names()
    params = module_defs.params()
    for path, text in c_test_sources().items():
        def flag(what, m):
            if (path, m.group(0)) in NOT_A_BOUND:
                return
            line = text.count('\n', 0, m.start()) + 1
            found.append('%s:%d: %s (%s)' % (path, line, what, m.group(0)))
        # the interface limits (configfs): the core never sees them
        for name, value in limits.items() if 'core/' not in path else ():
            # one over the limit, the usual way to exercise it
            for m in re.finditer(r'(?<![\w.])%d(?![\w.])' % (value + 1),
                                 text):
                flag('TLBB_%s + 1 restated' % name, m)
            for m in re.finditer(r'\{1,%d\}' % value, text):
                flag('TLBB_%s restated' % name, m)
        for mode in modes:
            forms = [re.escape(mode) + r'\\n']
            if mode not in STATE_NAMES:
                forms.append(re.escape(mode))
            for m in re.finditer(r'"(%s)"' % '|'.join(forms), text):
                flag('mode name restated (tlbb_set_mode/tlbb_mode_names)',
                     m)
        for p in params:
            # (0 is the unchecked value the core tests feed on purpose)
            bounds = {p.max, p.max + 1} | ({p.min - 1} if p.min > 1
                                           else set())
            # p.<name> = <bound>;  p.<name> = <x> + rng() % <span>
            for m in re.finditer(r'\.%s\s*=\s*(\d+)\s*;' % p.name, text):
                if int(m.group(1)) in bounds:
                    flag('bound of %s restated (PARAM_MIN/MAX)' % p.name, m)
            for m in re.finditer(r'\.%s\s*=[^;]*%%\s*(\d+)' % p.name, text):
                if int(m.group(1)) in (p.max, p.max - p.min + 1):
                    flag('range of %s restated (PARAM_MIN/MAX)' % p.name, m)
            # tlbb_set(vm, "<name>", "<n>\n") with n at or past a bound
            for m in re.finditer(r'"%s",\s*"(\d+)\\n"' % p.name, text):
                v = int(m.group(1))
                if not p.min <= v <= p.max:
                    flag('bound of %s restated (tlbb_params[])' % p.name, m)
    return found


def test_c_tests_take_limits_modes_and_bounds_from_the_def_tables():
    """The C tests include the .def tables (kernel-module/tests/lib/
    tlbb_defs.h builds TLBB_MAX_VCPUS, TLBB_MODE_* and tlbb_mode_names from
    them, as tlbb.h does; the core tests read PARAM_MIN/MAX from
    tlbb_param_descs), so a limit changed in the .def changes what the
    tests check."""
    with open(os.path.join(REPO, 'kernel-module/tests/lib/tlbb_defs.h')) as f:
        h = f.read()
    for table in ('tlbb_limits.def', 'tlbb_modes.def', 'tlbb_params.def',
                  'tlbb_stats.def'):
        assert '#include "%s"' % table in h, table
    assert 'TLBB_##name = (value)' in h
    with open(os.path.join(REPO, 'kernel-module/tests/guest',
                           't_badinput.c')) as f:
        bad = f.read()
    for name in module_defs.limits():
        assert 'TLBB_%s' % name in bad, name
    found = restated_in_c_tests()
    print('\n'.join(found))
    assert not found, '%d restated in the C tests' % len(found)


def test_restated_in_c_tests_finds_each_kind(tmp_path, monkeypatch):
    """The scanner above finds each kind of restatement (so its silence
    on the tree means something)."""
    src = tmp_path / 'kernel-module' / 'tests' / 'guest'
    src.mkdir(parents=True)
    for sub in ('tests/lib', 'core/tests'):
        (tmp_path / 'kernel-module' / sub).mkdir(parents=True)
    vcpus = module_defs.limit('MAX_VCPUS')
    interval = module_defs.param('interval_ms')
    samples = module_defs.param('samples')
    (src / 't_x.c').write_text(
        '/* %d in a comment is fine */\n'
        'for (i = 0; i < %d; i++)\n'
        'tlbb_set(VM, "mode", "balance\\n");\n'
        'wait_state(vm, "off");\n'
        'p.interval_ms = %d;\n'
        'p.interval_ms = 1 + rng() %% %d;\n'
        'tlbb_set(VM, "samples", "%d\\n");\n'
        % (vcpus + 1, vcpus + 1, interval.max, interval.max,
           samples.min - 1))
    monkeypatch.setattr('test_modclient.REPO', str(tmp_path))
    found = restated_in_c_tests()
    print('\n'.join(found))
    assert [f.split(': ', 1)[1].split(' (')[0] for f in found] == [
        'TLBB_MAX_VCPUS + 1 restated',
        'mode name restated',
        'bound of interval_ms restated',
        'range of interval_ms restated',
        'bound of samples restated'], found
