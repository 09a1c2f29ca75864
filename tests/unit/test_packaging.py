# SPDX-License-Identifier: Apache-2.0
"""Packaging: entry points as installed, and the nova.virt shim."""

import configparser
import importlib
import os
from importlib import metadata

import setuptools

TOP = os.path.join(os.path.dirname(__file__), '..', '..')


def _eps(group):
    return {ep.name: ep for ep in metadata.entry_points(group=group)}


def test_console_script():
    ep = _eps('console_scripts')['tlbbalance']
    assert ep.value == 'nova_tlbbalance.cli:main'
    assert callable(ep.load())


def test_nova_validators_entry_point():
    ep = _eps('nova.api.extra_spec_validators')['tlbbalance']
    assert callable(ep.load().register)


def test_oslo_config_entry_point():
    ep = _eps('oslo.config.opts')['nova_tlbbalance']
    [(group, _)] = ep.load()()
    assert group == 'tlbbalance'


def test_compute_driver_loads_as_nova_does():
    # nova: importutils.import_object('nova.virt.' + compute_driver)
    mod = importlib.import_module('nova.virt.tlbbalance')
    from nova_tlbbalance.driver import TLBBalanceLibvirtDriver
    from nova.virt.libvirt.driver import LibvirtDriver
    assert mod.TLBBalanceLibvirtDriver is TLBBalanceLibvirtDriver
    assert issubclass(TLBBalanceLibvirtDriver, LibvirtDriver)


def test_wheel_does_not_claim_nova_or_nova_virt():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(TOP, 'setup.cfg'))
    find = cfg['options.packages.find']
    pkgs = set(setuptools.find_namespace_packages(
        where=TOP, include=find['include'].split(),
        exclude=find['exclude'].split()))
    assert 'nova.virt.tlbbalance' in pkgs
    assert not pkgs & {'nova', 'nova.virt'}
    assert {'nova_tlbbalance', 'nova_tlbbalance.cli'} <= pkgs
    for path in ('nova/__init__.py', 'nova/virt/__init__.py'):
        assert not os.path.exists(os.path.join(TOP, path))
