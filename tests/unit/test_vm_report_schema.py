# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance status --json`` against docs/schemas/vm-report.schema.json.

The real CLI (``tlbbalance status --json``, its own argument parsing and
printing) runs over the vmreport test trees (tests/unit/
test_probes_vmreport.py: temporary /proc and /sys, a stand-in libvirt
connection, because KVM stage-2 stats and a registered module cannot run
on this host); tests/integration validates the output of the same command
against a real libvirtd. The schema is checked with jsonschema (pinned in
constraints.txt), and against the record classes field by field, so a
field added to one and not the other fails here.
"""

import dataclasses
import io
import json
import os
import typing
from contextlib import redirect_stdout

import jsonschema
import pytest

import test_probes_vmreport as trees  # tests/unit is on sys.path
from nova_tlbbalance import policy
from nova_tlbbalance import record
from nova_tlbbalance.cli import main as cli_main
from nova_tlbbalance.probes import records
from nova_tlbbalance.probes import vmreport

SCHEMA_PATH = os.path.join(os.path.dirname(__file__), '..', '..', 'docs',
                           'schemas', 'vm-report.schema.json')


def schema():
    with open(SCHEMA_PATH) as f:
        return json.load(f)


def status_json(monkeypatch, roots, conn, *opts):
    """``tlbbalance status --json [opts]`` with vmreport pointed at
    ``roots`` and ``conn``."""
    real = vmreport.collect
    monkeypatch.setattr(vmreport, 'collect',
                        lambda r, uri, monitor: real(roots, uri, monitor,
                                                     conn=conn))
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli_main(['status', '--json', *opts,
                         '--configfs', roots.configfs or '/nonexistent']) \
            == 0
    return json.loads(out.getvalue())


def validate(doc):
    jsonschema.Draft202012Validator.check_schema(schema())
    jsonschema.validate(doc, schema(),
                        cls=jsonschema.Draft202012Validator)


def test_status_json_validates(tmp_path, monkeypatch):
    roots = trees.tree(tmp_path)
    doc = status_json(monkeypatch, roots,
                      trees.FakeConn(trees.XML % trees.cpus(), trees.HVA))
    assert doc['schema_version'] == records.SCHEMA_VERSION == 2
    validate(doc)
    (vm,) = doc['vms']
    assert vm['stage2'] == {'pages_4k': 10, 'pages_2m': 31}
    assert vm['module']['status']['state'] == 'monitoring'


def test_policy_is_carried_whole_with_its_unknown_parts(
        tmp_path, monkeypatch):
    """The report carries the domain's Policy itself (not a copy of some
    of its fields): what a newer release wrote is in ``unknown``, typed
    status values are numbers."""
    roots = trees.tree(tmp_path)
    xml = (trees.XML % trees.cpus()).replace(
        ' mode="monitor"', ' mode="monitor" require_future="true"')
    doc = status_json(monkeypatch, roots, trees.FakeConn(xml, trees.HVA))
    validate(doc)
    (vm,) = doc['vms']
    assert vm['policy']['unknown'] == [
        'attribute require_future of <tlbbalance:policy>']
    assert vm['policy']['mode'] == 'monitor'
    assert isinstance(vm['module']['status']['pid'], int)


def test_unreadable_facts_are_null_and_validate(tmp_path, monkeypatch):
    # No hpage_pmd_size, no module, guest RAM not placeable, no monitor
    # (--no-monitor):
    # every key is still there, null where the fact could not be read.
    roots = trees.tree(tmp_path)
    os.unlink(roots.sys + '/kernel/mm/transparent_hugepage/hpage_pmd_size')
    roots.configfs = str(tmp_path / 'none')
    trees.write('%s/%d/maps' % (roots.proc, trees.PID), '')
    doc = status_json(monkeypatch, roots,
                      trees.FakeConn(trees.XML % trees.cpus(), trees.HVA),
                      '--no-monitor')
    validate(doc)
    vm = doc['vms'][0]
    assert doc['host']['hpage_pmd_size'] is None
    assert vm['ranges'] is None and vm['aligned'] is None
    assert vm['coverage'] is None and vm['errors']
    assert vm['module'] == {'registered': False, 'dir': None,
                            'reason': 'module not loaded', 'status': None,
                            'limiter': None}
    assert vm['stage2'] is None
    assert vm['stage2_unavailable'] == 'no monitor access'
    assert set(vm) == {f.name for f in dataclasses.fields(records.VmReport)}


def test_a_domain_without_pid_validates(tmp_path, monkeypatch):
    roots = trees.tree(tmp_path)
    os.unlink(roots.run_dir + '/vm1.pid')
    doc = status_json(monkeypatch, roots,
                      trees.FakeConn(trees.XML % trees.cpus(), trees.HVA))
    validate(doc)
    assert doc['vms'][0]['pid'] is None
    assert doc['vms'][0]['vcpus'] is None


def test_schema_rejects_a_missing_key(tmp_path, monkeypatch):
    roots = trees.tree(tmp_path)
    doc = status_json(monkeypatch, roots,
                      trees.FakeConn(trees.XML % trees.cpus(), trees.HVA))
    del doc['vms'][0]['aligned']
    with pytest.raises(jsonschema.ValidationError, match='aligned'):
        validate(doc)


SCHEMA_DEFS = {
    'host': records.HostFacts, 'vm': records.VmReport,
    'policy': policy.Policy, 'range': records.RamRange,
    'coverage': records.Coverage, 'vcpu': records.Vcpu,
    'module': records.ModuleState,
}


@pytest.mark.parametrize('name,cls', sorted(SCHEMA_DEFS.items()))
def test_schema_matches_the_records(name, cls):
    d = schema()['$defs'][name]
    # policy.Policy is a nova_tlbbalance.record record (the hook reads it
    # without importing dataclasses), the others dataclasses
    names = (record.fields(cls) if not dataclasses.is_dataclass(cls) else
             [f.name for f in dataclasses.fields(cls)])
    fields = {n for n in names
              if not (cls is records.HostFacts and n == 'topology')}
    assert set(d['properties']) == set(fields)
    assert set(d['required']) == set(fields)
    assert d['additionalProperties'] is False
    hints = typing.get_type_hints(cls)
    for fname in fields:
        prop = json.dumps(d['properties'][fname])
        optional = type(None) in typing.get_args(hints[fname])
        assert ('"null"' in prop) == optional, (name, fname, prop)
