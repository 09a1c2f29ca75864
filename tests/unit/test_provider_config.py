# SPDX-License-Identifier: Apache-2.0
"""nova_tlbbalance.provider_config over temporary /proc and /sys trees;
every file it writes is parsed and validated by nova's own provider
config loader (nova.compute.provider_config, schema 1.0)."""

import os
import pathlib
import shutil

import pytest
from nova import exception as nova_exc
from nova.compute import provider_config as nova_pc

from fake_module import fake_module_tree
from nova_tlbbalance import filewrite
from nova_tlbbalance import provider_config as pc


def write(path, text=''):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def roots(tmp_path):
    s, p = str(tmp_path / 'sys'), str(tmp_path / 'proc')
    write(p + '/cmdline', 'ro quiet\n')
    os.makedirs(s)
    return s, p


def load_module(s, version='1\n'):
    """The module's configfs root as the loaded module shows it
    (tests/fake_module.py); ``version`` None: that file missing."""
    root = fake_module_tree(pathlib.Path(s, 'kernel', 'config', 'tlbbalance'),
                            vms=())
    if version is None:
        (root / 'version').unlink()
    else:
        (root / 'version').write_text(version)


def nova_reads(path):
    """What nova-compute loads from the file (schema-checked by nova)."""
    return nova_pc._parse_provider_yaml(path)


@pytest.mark.parametrize('module,dvmbm,traits', [
    (False, False, []),
    (True, False, [pc.TRAIT_MODULE]),
    (False, True, [pc.TRAIT_DVMBM]),
    (True, True, [pc.TRAIT_MODULE, pc.TRAIT_DVMBM]),
])
def test_traits_follow_host_facts(tmp_path, module, dvmbm, traits):
    s, p = roots(tmp_path)
    if module:
        load_module(s)
    if dvmbm:
        write(s + '/module/kvm/parameters/dvmbm_enabled', 'Y\n')
    got = pc.host_traits(s, p, kmsg_lines=[], module_trait=True)
    assert [t for t, _ in got] == traits
    out = str(tmp_path / 'provider' / 'tlbbalance.yaml')
    assert filewrite.write_if_changed(out, pc.render(got), 0o644) is True
    data = nova_reads(out)
    assert data['meta'] == {'schema_version': '1.0'}
    prov, = data['providers']
    assert prov['identification'] == {'uuid': '$COMPUTE_NODE'}
    assert prov.get('traits', {}).get('additional', []) == traits


def test_module_trait_only_when_asked(tmp_path):
    # the driver plugin owns it (it follows the module at every resource
    # update; tests/functional/test_module_trait.py): a provider config,
    # read only when nova-compute starts, leaves it out by default
    s, p = roots(tmp_path)
    load_module(s)
    assert pc.host_traits(s, p, kmsg_lines=[]) == []
    assert pc.host_traits(s, p, kmsg_lines=[], module_trait=True)[0][0] \
        == pc.TRAIT_MODULE


@pytest.mark.parametrize('version,why', [
    (None, 'cannot be read'),
    ('banana\n', 'not a number'),
])
def test_broken_module_has_no_trait(tmp_path, version, why):
    s, p = roots(tmp_path)
    load_module(s, version)
    assert pc.host_traits(s, p, kmsg_lines=[], module_trait=True) == []
    usable, said = pc.module_state(s)
    assert not usable and why in said


def test_module_loaded_without_configfs_has_no_trait(tmp_path):
    s, p = roots(tmp_path)
    os.makedirs(s + '/module/tlbbalance')
    assert pc.host_traits(s, p, kmsg_lines=[], module_trait=True) == []


def test_dvmbm_from_kernel_log_and_command_line(tmp_path):
    s, p = roots(tmp_path)
    assert pc.host_traits(s, p, kmsg_lines=['6,1,2,-;KVM dvmbm enabled']) \
        == [(pc.TRAIT_DVMBM, 'DVMBM enabled (kernel log)')]
    write(p + '/cmdline', 'ro kvm-arm.dvmbm_enabled=1\n')
    assert pc.host_traits(s, p, kmsg_lines=[])[0][0] == pc.TRAIT_DVMBM


def test_cli_writes_only_on_change(tmp_path, capsys):
    s, p = roots(tmp_path)
    load_module(s)
    out = str(tmp_path / 'pc' / 'tlbbalance.yaml')
    argv = ['--output', out, '--sys-root', s, '--proc-root', p,
            '--module-trait', '--trait', 'CUSTOM_RACK_A']
    assert pc.main(argv) == 0
    assert capsys.readouterr().out == (
        'written %s traits=CUSTOM_TLBBALANCE_MODULE,CUSTOM_RACK_A\n' % out)
    mtime = os.stat(out).st_mtime_ns
    assert pc.main(argv) == 0
    assert capsys.readouterr().out.startswith('unchanged %s ' % out)
    assert os.stat(out).st_mtime_ns == mtime
    assert nova_reads(out)['providers'][0]['traits']['additional'] == [
        'CUSTOM_TLBBALANCE_MODULE', 'CUSTOM_RACK_A']
    shutil.rmtree(s + '/kernel/config/tlbbalance')      # module unloaded
    assert pc.main(argv) == 0
    assert capsys.readouterr().out == (
        'written %s traits=CUSTOM_RACK_A\n' % out)


def test_named_provider_and_stdout(tmp_path, capsys):
    s, p = roots(tmp_path)
    assert pc.main(['--name', 'compute-7', '--sys-root', s,
                    '--proc-root', p]) == 0
    text = capsys.readouterr().out
    path = str(tmp_path / 'x.yaml')
    write(path, text)
    assert nova_reads(path)['providers'][0]['identification'] == {
        'name': 'compute-7'}


@pytest.mark.parametrize('argv,culprit', [
    (['--trait', 'rack_a'], "'rack_a'"),
    (['--trait', 'HW_CPU_X86_AVX'], "'HW_CPU_X86_AVX'"),
    (['--uuid', 'not-a-uuid'], "'not-a-uuid'"),
])
def test_bad_input_is_named(tmp_path, capsys, argv, culprit):
    s, p = roots(tmp_path)
    with pytest.raises(SystemExit) as e:
        pc.main(argv + ['--sys-root', s, '--proc-root', p])
    assert e.value.code == 2
    assert culprit in capsys.readouterr().err


def test_nova_rejects_what_the_schema_forbids(tmp_path):
    """The check above is nova's own: a file it refuses fails it."""
    path = str(tmp_path / 'bad.yaml')
    write(path, pc.render([]).replace("'1.0'", "'2.0'"))
    with pytest.raises(nova_exc.ProviderConfigException):
        nova_reads(path)


def test_cli_check_writes_nothing(tmp_path, capsys):
    s, p = roots(tmp_path)
    out = str(tmp_path / 'pc' / 'tlbbalance.yaml')
    argv = ['--output', out, '--sys-root', s, '--proc-root', p]
    assert pc.main(argv + ['--check']) == 0
    assert capsys.readouterr().out == 'would write %s traits=-\n' % out
    assert not os.path.exists(out)
    assert pc.main(argv) == 0
    capsys.readouterr()
    assert pc.main(argv + ['--check']) == 0
    assert capsys.readouterr().out == 'unchanged %s traits=-\n' % out


def test_unwritable_output_is_named(tmp_path, capsys):
    """A place it cannot write (here: a parent that is a file; in a
    container, a bind-mounted directory the user may not write) is one
    line naming the file and the reason, exit 1: no traceback."""
    s, p = roots(tmp_path)
    write(str(tmp_path / 'afile'), 'x')
    out = str(tmp_path / 'afile' / 'tlbbalance.yaml')
    assert pc.main(['--output', out, '--sys-root', s,
                    '--proc-root', p]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(
        'provider_config: cannot write %s: ' % out), err
    assert 'Traceback' not in err
