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


def test_thp_conflict_row_names_a_huge_page_size():
    """backing=thp is refused with hw:mem_page_size set to a huge page
    size only: `small` and 4 KiB sizes give no hugetlbfs backing and are
    accepted (tests/functional/test_boot_modes.py), so the table must
    not say "(large or a size)"."""
    text = extra_specs_doc.render()
    row, = [line for line in text.splitlines()
            if line.startswith('| `tlbbalance:backing=thp` with '
                               '`hw:mem_page_size`')]
    assert 'a huge page size' in row
    assert 'large or a size' not in row
    assert '`hw:mem_page_size=small` or a 4 KiB size is accepted' in row
