# SPDX-License-Identifier: Apache-2.0
"""The simulator front end is an optional extra: its code is in the
package (standard library only), its dependencies are in the ``sim``
extra, nothing outside it imports it, and using what needs the extra
without it says which extra to install (docs/simulator.md)."""

import ast
import configparser
import os
import subprocess
import sys

import pytest

from nova_tlbbalance import cli

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PKG = os.path.join(TOP, 'nova_tlbbalance')


def test_plot_without_the_extra_names_it(monkeypatch, capsys, tmp_path):
    """No matplotlib (an install without ``[sim]``): ``--plot`` fails at
    once, before any run, naming the extra to install."""
    for name in ('matplotlib', 'matplotlib.pyplot',
                 'nova_tlbbalance.simulate.plots'):
        # None in sys.modules: ``import name`` raises ImportError
        monkeypatch.setitem(sys.modules, name, None)
    png = tmp_path / 'run.png'
    # no tlbsim is needed: nothing runs
    monkeypatch.setenv('TLBSIM_BIN', str(tmp_path / 'no-tlbsim'))
    rc = cli.main(['simulate', '--workload', 'seq:size=256M,stride=16K',
                   '--accesses', '1e6', '--plot', str(png)])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ''
    assert err.startswith('tlbbalance simulate: --plot needs matplotlib'), err
    assert "pip install 'nova-tlbbalance[sim]'" in err, err
    assert not png.exists()


def _imports(path):
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from ('%s.%s' % (node.module, a.name) for a in node.names)


def test_nothing_outside_the_simulator_imports_it():
    front_end = {os.path.join(PKG, 'cli', 'simulate.py')}
    sim_dir = os.path.join(PKG, 'simulate') + os.sep
    found = []
    for root, _, files in os.walk(PKG):
        for name in files:
            path = os.path.join(root, name)
            if (not name.endswith('.py') or path in front_end
                    or path.startswith(sim_dir)):
                continue
            found += ['%s: %s' % (os.path.relpath(path, TOP), mod)
                      for mod in _imports(path)
                      if mod.startswith('nova_tlbbalance.simulate')
                      or mod == 'nova_tlbbalance.cli.simulate']
    assert not found


@pytest.mark.parametrize('command', [c for c in cli.COMMANDS
                                     if c != 'simulate'])
def test_other_commands_load_nothing_of_the_simulator(command):
    code = ('import sys\n'
            'from nova_tlbbalance import cli\n'
            'cli.build_parser(%r)\n'
            'print(sorted(m for m in sys.modules\n'
            '             if m.startswith("nova_tlbbalance.simulate")\n'
            '             or m == "nova_tlbbalance.cli.simulate"))\n'
            % command)
    p = subprocess.run([sys.executable, '-c', code], cwd=TOP,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == '[]', (command, p.stdout)


def test_the_extra_carries_the_dependencies():
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(os.path.join(TOP, 'setup.cfg'))
    extras = cfg['options.extras_require']
    assert extras['sim'].split() == ['matplotlib>=3.7']
    # the name the extra had before, kept for compatibility
    assert extras['plot'].split() == extras['sim'].split()
    with open(os.path.join(TOP, 'requirements.txt')) as f:
        assert 'matplotlib' not in f.read()
