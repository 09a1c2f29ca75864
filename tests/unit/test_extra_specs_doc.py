# SPDX-License-Identifier: Apache-2.0
"""docs/extra-specs.md is generated from the table and must be current."""

import os

import pytest

from nova_tlbbalance import extra_specs as es
from nova_tlbbalance import extra_specs_doc

DOC = os.path.join(os.path.dirname(__file__), '..', '..', 'docs',
                   'extra-specs.md')


def test_committed_doc_is_current():
    with open(DOC) as f:
        committed = f.read()
    assert committed == extra_specs_doc.render(), (
        'docs/extra-specs.md is stale: run '
        'python -m nova_tlbbalance.extra_specs_doc docs/extra-specs.md')


def test_every_key_in_the_doc():
    text = extra_specs_doc.render()
    for s in es.SPECS:
        assert '| `%s` |' % s.key in text
        if s.param:
            assert '%d..%d' % (s.min, s.max) in text


def test_main_writes_file(tmp_path):
    out = tmp_path / 'x.md'
    assert extra_specs_doc.main([str(out)]) == 0
    assert out.read_text() == extra_specs_doc.render()


def test_help_prints_usage_and_writes_no_file(tmp_path, monkeypatch,
                                              capsys):
    # `--help` was once taken for the output path: a file named --help
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        extra_specs_doc.main(['--help'])
    assert exc.value.code == 0
    assert 'usage:' in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
