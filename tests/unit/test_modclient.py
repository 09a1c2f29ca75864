"""modclient against a directory tree standing in for configfs.

UNIT TEST ONLY: the tlbbalance module cannot be loaded on this host, so a
temporary directory plays /sys/kernel/config/tlbbalance (files the module
would create are pre-created). The real module's configfs is exercised by
tests/e2e inside a booted Debian kernel.
"""

import errno
import os

import pytest

from nova_tlbbalance import modclient
from nova_tlbbalance import module_defs

ATTRS = ('pid', 'vcpu_tids', 'ranges', 'mode', 'status')


def fake_tree(tmp_path, vms=('vm1',)):
    root = tmp_path / 'tlbbalance'
    (root / 'vms').mkdir(parents=True)
    (root / 'version').write_text('1\n')
    for vm in vms:
        d = root / 'vms' / vm
        d.mkdir()
        for a in ATTRS + tuple(p.name for p in module_defs.params()):
            (d / a).write_text('')
    return root


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


def test_stop_status_unregister(tmp_path):
    root = fake_tree(tmp_path, vms=('vm1', 'empty'))
    (root / 'vms/vm1/status').write_text(
        'huge_pages 12\nstate exited\nmode monitor\npid 99\n')
    c = modclient.Client(str(root))
    assert c.stop('vm1') is True
    assert open(str(root / 'vms/vm1/mode')).read() == 'off'
    assert c.stop('gone') is False
    assert c.status('vm1') == {'huge_pages': '12', 'state': 'exited',
                               'mode': 'monitor', 'pid': '99'}
    assert c.status('gone') is None
    for f in os.listdir(str(root / 'vms/empty')):
        os.unlink(str(root / 'vms/empty' / f))
    assert c.unregister('empty') is True
    assert c.unregister('empty') is False
    with pytest.raises(modclient.ModuleError, match='rmdir'):
        c.unregister('vm1')      # a plain dir with files: ENOTEMPTY
