# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance domain apply`` through the real argument parser."""

from nova_tlbbalance import cli

PLAIN = """<domain type='qemu'><name>d</name>
<memory unit='MiB'>257</memory><vcpu>2</vcpu>
<os><type arch='x86_64' machine='pc'>hvm</type></os></domain>"""


def test_apply(tmp_path, capsys):
    src = tmp_path / 'd.xml'
    src.write_text(PLAIN)
    rc = cli.main(['domain', 'apply', '-s', 'mode=balance',
                   '-s', 'tlbbalance:backing=thp', '-s',
                   'imbalance_threshold=30', '-s', 'prefault=true',
                   '--huge-page-kib', '2048',
                   str(src)])
    out = capsys.readouterr().out
    assert rc == 0
    assert 'mode="balance" backing="thp"' in out
    assert '<tlbbalance:param name="imbalance_threshold" value="30"/>' in out
    assert '<allocation mode="immediate"/>' in out
    assert '<memory unit="KiB">262144</memory>' in out     # whole 2 MiB


def test_apply_bad_input_names_culprit(tmp_path, capsys):
    src = tmp_path / 'd.xml'
    src.write_text(PLAIN)
    assert cli.main(['domain', 'apply', '-s', 'mode=fast', str(src)]) == 2
    assert "tlbbalance:mode: invalid value 'fast'" in capsys.readouterr().err
    assert cli.main(['domain', 'apply', '-s', 'mode', str(src)]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err
    assert cli.main(['domain', 'apply', '-s', 'mode=monitor',
                     str(tmp_path / 'nope.xml')]) == 2
    assert 'nope.xml' in capsys.readouterr().err
    src.write_text('<domain>')
    assert cli.main(['domain', 'apply', '-s', 'mode=monitor', str(src)]) == 2
    assert 'not well-formed' in capsys.readouterr().err
