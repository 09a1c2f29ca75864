# SPDX-License-Identifier: Apache-2.0
"""The cloud's virtualenv is the checkout's own: ``up`` installs the
checkout's package and tempest plugin into it, so two checkouts sharing
one tested each other's code (seen: a helper's tempest run ran another
branch's plugin). Virtualenvs of checkouts that are gone are removed."""

import os

from cloudtools import cloud_modules

(cloud,) = cloud_modules('cloud')


def test_each_checkout_has_its_own_venv(tmp_path, monkeypatch):
    monkeypatch.delenv('TLBB_CLOUD_VENV', raising=False)
    a, b = tmp_path / 'a', tmp_path / 'b'
    a.mkdir()
    b.mkdir()
    va, vb = cloud.venv_for(str(a)), cloud.venv_for(str(b))
    assert va != vb
    assert os.path.basename(va).startswith('cloud-venv-')
    assert os.path.dirname(va) == cloud.CACHE
    # the same checkout by another spelling of its path: the same venv
    assert cloud.venv_for(str(a) + '/.') == va
    monkeypatch.setenv('TLBB_CLOUD_VENV', str(tmp_path / 'mine'))
    assert cloud.venv_for(str(a)) == str(tmp_path / 'mine')


def test_prune_removes_only_venvs_of_vanished_checkouts(tmp_path,
                                                        monkeypatch):
    cache = tmp_path / 'cache'
    cache.mkdir()
    monkeypatch.setattr(cloud, 'CACHE', str(cache))
    monkeypatch.setattr(cloud, 'VENV', str(cache / 'cloud-venv-mine'))
    monkeypatch.setattr(cloud, 'say', lambda msg: None)
    here = tmp_path / 'checkout'
    here.mkdir()

    def venv(name, checkout):
        d = cache / name
        d.mkdir()
        if checkout is not None:
            (d / cloud.CHECKOUT_FILE).write_text(checkout + '\n')
        return d
    gone = venv('cloud-venv-000000000001', str(tmp_path / 'deleted'))
    kept = venv('cloud-venv-000000000002', str(here))
    unknown = venv('cloud-venv-000000000003', None)
    mine = venv('cloud-venv-mine', str(tmp_path / 'deleted'))
    legacy = venv('cloud-venv', str(tmp_path / 'deleted'))
    cloud.prune_venvs()
    assert not gone.exists() and not (cache / (gone.name + '.lock')).exists()
    assert kept.exists() and unknown.exists() and mine.exists()
    assert legacy.exists()
