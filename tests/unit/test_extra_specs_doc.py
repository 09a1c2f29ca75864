"""docs/extra-specs.md is generated from the table and must be current."""

import os

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
