# SPDX-License-Identifier: Apache-2.0
"""A compute host of the cloud in a box on release N-1 (tools/cloud,
docs/cloud.md "A host on release N-1"): the release exported
(tools/releases.py), its own installer installing its own hook, its CLI,
its tree on nova-compute's path, the knob and the tempest options. Run
for real here without daemons; tox -e tempest runs the host
(tlbbalance_tempest_plugin/tests/scenario/test_mixed_versions.py)."""

import argparse
import os
import subprocess
import sys

import pytest

from cloudtools import cloud_modules
import releases

cloud, computehost, configs, procs, run_tempest = cloud_modules(
    'cloud', 'computehost', 'configs', 'procs', 'run_tempest')


@pytest.fixture(scope='module')
def tree(tmp_path_factory):
    return releases.export(releases.PREVIOUS,
                           str(tmp_path_factory.mktemp('n1')))


def layout(tmp_path):
    # the venv: this interpreter's (the hook's and the CLI's python)
    return configs.Layout(str(tmp_path / 'cloud'), 24400,
                          os.path.dirname(os.path.dirname(sys.executable)),
                          configs.new_secrets())


def n1_host(lay, tree, commit=releases.PREVIOUS):
    """tlbb-fast-2 on the release exported in ``tree``."""
    return computehost.ComputeHost(lay, 'tlbb-fast-2', caps_cache=None,
                                   hugepages=0, index=1,
                                   release={'commit': commit, 'tree': tree})


def test_export_gives_that_releases_package(tree, tmp_path):
    # (not from the checkout: a -c script has its cwd first on sys.path)
    p = subprocess.run(
        [sys.executable, '-c', 'import nova_tlbbalance, sys; '
         'print(nova_tlbbalance.__file__)'],
        env=dict(os.environ, PYTHONPATH=tree), capture_output=True,
        text=True, check=True, cwd=str(tmp_path))
    assert p.stdout.strip().startswith(tree + os.sep)
    assert os.path.isfile(os.path.join(tree, 'libvirt-hooks', 'tlbbalance'))
    with open(os.path.join(tree, 'RELEASE')) as f:
        assert f.read().strip() == releases.PREVIOUS


def test_export_of_a_missing_commit_names_it(tmp_path):
    with pytest.raises(RuntimeError, match='no-such-commit'):
        releases.export('no-such-commit', str(tmp_path))


def test_the_n1_host_installs_n1s_hook_with_its_installer(tree, tmp_path):
    lay = layout(tmp_path)
    h = n1_host(lay, tree)
    os.makedirs(os.path.dirname(h.lh.hook_path))
    h.lh._install_hook_of(tree)
    with open(h.lh.hook_path) as f:
        hook = f.read()
    # N-1's template, N-1's tree on the hook's path, the host's settings
    with open(os.path.join(tree, 'libvirt-hooks', 'tlbbalance')) as f:
        template = f.read()
    assert hook.splitlines()[1:3] == template.splitlines()[1:3]
    assert 'sys.path.insert(0, %r)' % tree in hook
    with open(h.lh.hook_conf) as f:
        conf = f.read()
    assert h.hook_log in conf
    # this checkout's hook is not what was installed
    here = os.path.join(releases.TOP, 'libvirt-hooks', 'tlbbalance')
    with open(here) as f:
        assert f.read().split('# -- end')[1] != \
            hook.split('# -- end')[1]


def test_a_bad_n1_tree_is_an_error_naming_it(tmp_path):
    lay = layout(tmp_path)
    h = n1_host(lay, str(tmp_path / 'empty'), commit='x')
    os.makedirs(os.path.dirname(h.lh.hook_path))
    with pytest.raises(RuntimeError, match='empty'):
        h.lh._install_hook_of(str(tmp_path / 'empty'))


def test_n1_cli_is_that_releases(tree):
    argv = computehost.cli_of(sys.executable, tree) + ['--help']
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert 'reconcile' in p.stdout      # the contract's release has it


def test_facts_of_an_n1_host(tree, tmp_path):
    lay = layout(tmp_path)
    n1 = n1_host(lay, tree)
    n = computehost.ComputeHost(lay, 'tlbb-fast-1', caps_cache=None,
                                hugepages=0)
    assert n1.lh.hook_tree == tree and n.lh.hook_tree is None
    for h in (n1, n):
        h.lh.ns_prefix = lambda: ['nsenter']
    f1, f = n1.facts(), n.facts()
    assert f1['release'] == releases.PREVIOUS
    assert f1['cli'] == computehost.cli_of(lay.bin('python'), tree)
    assert 'release' not in f and 'cli' not in f
    assert f1['compute_log'] == lay.log('nova-compute-tlbb-fast-2')
    facts = {'venv': '/v', 'hosts': [f, f1]}
    # cloud.py host NAME tlbbalance ...: the host's own CLI
    assert cloud.host_argv(facts, 'tlbb-fast-2', ['tlbbalance', 'status']) \
        == ['nsenter'] + f1['cli'] + ['status']
    assert cloud.host_argv(facts, 'tlbb-fast-1', ['tlbbalance', 'status']) \
        == ['nsenter', '/v/bin/tlbbalance', 'status']
    # tempest: the N-1 host first, then one on this checkout
    assert run_tempest.mixed_version_hosts(facts) == ['tlbb-fast-2',
                                                      'tlbb-fast-1']
    assert run_tempest.mixed_version_hosts({'hosts': [f]}) == []


def test_release_n1_knob(monkeypatch):
    names = ['tlbb-fast-1', 'tlbb-fast-2']
    monkeypatch.delenv('TLBB_CLOUD_RELEASE_N1', raising=False)
    assert cloud.release_n1_hosts(argparse.Namespace(), names) == []
    monkeypatch.setenv('TLBB_CLOUD_RELEASE_N1', ' tlbb-fast-2, ')
    assert cloud.release_n1_hosts(argparse.Namespace(), names) == \
        ['tlbb-fast-2']
    # the option wins over the variable
    assert cloud.release_n1_hosts(argparse.Namespace(
        release_n1=['tlbb-fast-1']), names) == ['tlbb-fast-1']
    monkeypatch.setenv('TLBB_CLOUD_RELEASE_N1', 'tlbb-kvm-1')
    with pytest.raises(procs.CloudError, match='tlbb-kvm-1.*tlbb-fast-1'):
        cloud.release_n1_hosts(argparse.Namespace(), names)


def test_up_takes_release_n1(monkeypatch):
    got = {}
    monkeypatch.setattr(cloud, 'up', lambda args: got.setdefault(
        'args', args) and 0)
    cloud.main(['up', '--release-n1', 'tlbb-fast-2'])
    assert got['args'].release_n1 == ['tlbb-fast-2']
