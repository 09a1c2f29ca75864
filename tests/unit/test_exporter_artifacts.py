# SPDX-License-Identifier: Apache-2.0
"""What ships beside the exporter, checked with Prometheus's own tools.

``promtool`` (Debian's prometheus package, tools/ci/system-packages.txt)
checks the exposition (``check metrics``), the alert rules (``check
rules`` and their unit tests, ``test rules``) and every query of the
Grafana dashboard; ``systemd-analyze verify`` the unit file. The metric
names the rules and the dashboard use must be ones the exporter exports.
"""

import copy
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from nova_tlbbalance import cli
from nova_tlbbalance import exporter

import test_verdict_exporter as tv

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
ALERTS = os.path.join(TOP, 'etc', 'prometheus', 'tlbbalance-alerts.yml')
ALERT_TESTS = os.path.join(TOP, 'etc', 'prometheus',
                           'tlbbalance-alerts.test.yml')
DASHBOARD = os.path.join(TOP, 'etc', 'grafana', 'tlbbalance-dashboard.json')
UNIT = os.path.join(TOP, 'etc', 'systemd', 'tlbbalance-exporter.service')
NAME = re.compile(r'\btlbbalance_[a-z0-9_]+\b')


def tool(name):
    path = shutil.which(name)
    assert path, ('%s is missing: tools/ci/install-system-deps.sh installs '
                  'it (tools/ci/system-packages.txt)' % name)
    return path


def full_text():
    """A scrape with every family: a registered VM with every module
    statistic, verify's verdicts and the exporter's own metrics."""
    rep = copy.deepcopy(tv.GOOD)
    rep.module.status = tv.FULL_STATUS
    fams = exporter.self_families(exporter.SelfState(
        up=True, version='0.1.0', libvirt_version='9.0.0', duration=0.2,
        timestamp=1.7e9, collections=3, connections=1))
    fams += exporter.families(tv.HOST, [rep], {'vm1': ['a reason']})
    return exporter.Snapshot(fams, 0).text()


def exported_names():
    names = set()
    for line in full_text().splitlines():
        if line.startswith('# TYPE '):
            names.add(line.split()[2])
        elif line and not line.startswith('#'):
            names.add(re.split(r'[{ ]', line, 1)[0])
    return names


def test_exposition_passes_promtool_check_metrics():
    """Every name and type of a full scrape is one promtool accepts (it
    refused tlbbalance_load_count: _count is reserved)."""
    text = full_text()
    assert 'tlbbalance_load_count' not in text
    p = subprocess.run([tool('promtool'), 'check', 'metrics'], input=text,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not (p.stdout + p.stderr).strip(), (
        p.stdout, p.stderr)


def test_alert_rules_pass_promtool_check_and_unit_tests():
    p = subprocess.run([tool('promtool'), 'check', 'rules', ALERTS],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert 'SUCCESS: 8 rules found' in p.stdout, p.stdout
    p = subprocess.run([tool('promtool'), 'test', 'rules', ALERT_TESTS],
                       capture_output=True, text=True, timeout=60,
                       cwd=os.path.dirname(ALERT_TESTS))
    assert p.returncode == 0, p.stdout + p.stderr


def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def exprs():
    return [(p['title'], t['expr']) for p in dashboard()['panels']
            for t in p['targets']]


def test_rules_and_dashboard_use_exported_names():
    names = exported_names()
    with open(ALERTS) as f:
        used = set(NAME.findall(f.read()))
    for _, expr in exprs():
        used |= set(NAME.findall(expr))
    for var in dashboard()['templating']['list']:
        used |= set(NAME.findall(var.get('definition', '')))
    assert used and used <= names, sorted(used - names)


def test_dashboard_json_is_a_valid_grafana_dashboard():
    d = dashboard()
    for key in ('title', 'uid', 'schemaVersion', 'panels', 'templating'):
        assert key in d, key
    variables = {v['name'] for v in d['templating']['list']}
    assert {'datasource', 'instance', 'vm'} <= variables
    ids = [p['id'] for p in d['panels']]
    assert len(ids) == len(set(ids)), ids
    cells = set()
    for p in d['panels']:
        assert p['type'] in ('stat', 'timeseries', 'state-timeline',
                             'table'), p['type']
        assert p['datasource'] == {'type': 'prometheus',
                                   'uid': '${datasource}'}, p['title']
        g = p['gridPos']
        assert 0 <= g['x'] and g['x'] + g['w'] <= 24 and g['h'] > 0, p
        for x in range(g['x'], g['x'] + g['w']):
            for y in range(g['y'], g['y'] + g['h']):
                assert (x, y) not in cells, ('panels overlap', p['title'])
                cells.add((x, y))
        refs = [t['refId'] for t in p['targets']]
        assert refs and len(refs) == len(set(refs)), p['title']
        for t in p['targets']:
            for var in re.findall(r'\$(\w+)', t['expr']):
                assert var in variables or var == '__rate_interval', (
                    p['title'], var)


def test_dashboard_queries_are_valid_promql(tmp_path):
    """promtool parses each query (as a recording rule, the template
    variables filled in as Grafana would)."""
    rules = []
    for i, (title, expr) in enumerate(exprs()):
        expr = (expr.replace('$__rate_interval', '5m')
                .replace('$instance', '.*').replace('$vm', '.*'))
        rules.append({'record': 'tlbbalance:dashboard_panel_%d' % i,
                      'expr': expr})
    path = tmp_path / 'dashboard-rules.yml'
    path.write_text(json.dumps({'groups': [{'name': 'dashboard',
                                            'rules': rules}]}))
    p = subprocess.run([tool('promtool'), 'check', 'rules', str(path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def unit_exec_args():
    with open(UNIT) as f:
        text = f.read()
    line = re.search(r'^ExecStart=(.*)$', text, re.M).group(1)
    example = re.search(r'TLBBALANCE_EXPORTER_ARGS="([^"]*)"', text).group(1)
    return text, shlex.split(line), shlex.split(example)


def test_systemd_unit_verifies_and_its_command_parses(tmp_path):
    text, argv, example = unit_exec_args()
    assert argv[:2] == ['/usr/local/bin/tlbbalance', 'exporter']
    assert argv[-1] == '$TLBBALANCE_EXPORTER_ARGS'
    # the command line with the documented example options parses
    args = cli.build_parser().parse_args(argv[1:-1] + example)
    assert args.listen == '::' and args.web_config
    assert args.user == 'nobody'
    # systemd-analyze wants the executable to exist: the installed one
    installed = (shutil.which('tlbbalance',
                              path=os.path.dirname(sys.executable))
                 or shutil.which('tlbbalance'))
    assert installed, 'the tlbbalance console script is not installed'
    unit = tmp_path / 'tlbbalance-exporter.service'
    unit.write_text(text.replace('/usr/local/bin/tlbbalance', installed))
    p = subprocess.run([tool('systemd-analyze'), 'verify', str(unit)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    # nothing but noise about units of this machine
    assert 'tlbbalance-exporter.service' not in p.stderr, p.stderr


@pytest.mark.parametrize('key', ['NoNewPrivileges=yes',
                                 'ProtectSystem=strict',
                                 'CapabilityBoundingSet=CAP_SYS_PTRACE '
                                 'CAP_DAC_READ_SEARCH CAP_SETUID '
                                 'CAP_SETGID'])
def test_systemd_unit_is_hardened(key):
    assert key in unit_exec_args()[0]
