# SPDX-License-Identifier: Apache-2.0
"""nova_tlbbalance.conf: the [tlbbalance] options and their sample."""

import os

from oslo_config import cfg
from oslo_config import generator
import pytest

from nova_tlbbalance import conf
from nova_tlbbalance import extra_specs as es

TOP = os.path.join(os.path.dirname(__file__), '..', '..')


def _conf(**overrides):
    c = cfg.ConfigOpts()
    conf.register_opts(c)
    c([], project='test')
    for k, v in overrides.items():
        c.set_override(k, v, group='tlbbalance')
    return c


def test_defaults_leave_untagged_flavors_alone():
    assert conf.defaults(_conf()) == {'mode': None, 'backing': None,
                                      'tlbi_scope': None, 'strict': None,
                                      'prefault': None}


def test_defaults_from_options():
    c = _conf(default_mode='monitor', default_strict=True)
    d = conf.defaults(c)
    assert (d['mode'], d['strict']) == ('monitor', True)


def test_default_prefault_reaches_the_policy():
    from nova_tlbbalance.policy import Policy
    c = _conf(default_mode='monitor', default_prefault=False)
    assert Policy.from_extra_specs({}, conf.defaults(c)).prefault is False
    # The flavor's own key wins over the host default.
    assert Policy.from_extra_specs({'tlbbalance:prefault': 'true'},
                                   conf.defaults(c)).prefault is True


def test_choices_come_from_the_table():
    c = _conf()
    with pytest.raises(ValueError):
        c.set_override('default_mode', 'fast', group='tlbbalance')
    opts = {o.name: o for o in conf.opts}
    assert [v for v, _ in opts['default_backing'].type.choices.items()] \
        == list(es.BACKINGS)


def test_list_opts():
    [(group, opts)] = conf.list_opts()
    assert group == 'tlbbalance'
    assert {o.name for o in opts} >= {'default_mode', 'thp_page_size_kb'}


def test_committed_sample_is_current(tmp_path):
    out = tmp_path / 'sample'
    generator.main(['--namespace', 'nova_tlbbalance', '--wrap-width', '79',
                    '--output-file', str(out)])
    with open(os.path.join(TOP, 'etc', 'tlbbalance.conf.sample')) as f:
        committed = f.read()
    assert out.read_text() == committed, (
        'etc/tlbbalance.conf.sample is stale: run tox -e genconfig')
