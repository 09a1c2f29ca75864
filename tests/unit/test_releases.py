# SPDX-License-Identifier: Apache-2.0
"""Release N-1 beside N: what each writes, the other reads
(docs/upgrade.md).

N-1 here is release 0.1.0, the last commit before the contract
(``BEFORE_CONTRACT`` of tools/releases.py, the one place that names and
exports earlier releases), exported into a temporary directory and
imported from there in a subprocess of its own (two trees cannot
share one ``nova_tlbbalance`` in one interpreter): its own policy code,
its own hook (with this file's fake host from test_hook: a directory tree
stands in for the module) and its own compute driver's
``instance_policy`` (nova imported, a flavor object standing in for an
instance). N is the working tree.
"""

import json
import os
import subprocess
import sys

import pytest

from nova_tlbbalance import driver
from nova_tlbbalance import guest_config
from nova_tlbbalance.policy import Policy
import releases

# test_hook's fake host (a fixture: F401 here, F811 where it is used)
from test_hook import domain, fake, load_module, run  # noqa: F401

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# The last commit before the compatibility contract (release 0.1.0 as
# deployed): the policy reader refuses unknown names there.
PREVIOUS = releases.BEFORE_CONTRACT

POLICIES = (
    Policy(mode='monitor'),
    Policy(mode='balance', backing='hugetlbfs', tlbi_scope='die',
           strict=True, params={'samples': 7, 'imbalance_threshold': 30}),
    Policy(mode='balance', prefault=False),
    Policy(mode='off', backing='none', tlbi_scope='cluster'),
)


@pytest.fixture(scope='module')
def previous(tmp_path_factory):
    """The N-1 tree (package, hook script, the .def tables its package
    data links to)."""
    return releases.export(PREVIOUS, str(tmp_path_factory.mktemp(
        'previous-release')), top=TOP)


def in_previous(tree, code, stdin=b''):
    """Run ``code`` with N-1's nova_tlbbalance first on sys.path; its
    stdout parsed as JSON."""
    p = subprocess.run(
        [sys.executable, '-c', 'import sys; sys.path.insert(0, %r)\n'
         'import nova_tlbbalance\n'
         'assert nova_tlbbalance.__file__.startswith(%r)\n%s'
         % (tree, tree, code)],
        input=stdin, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def test_previous_release_reads_what_this_one_writes(previous):
    docs = [p.to_xml() for p in POLICIES]
    specs = [p.to_extra_specs() for p in POLICIES]
    got = in_previous(previous, '''
import json
from nova_tlbbalance.policy import Policy
xml, specs = json.load(sys.stdin)
print(json.dumps([[Policy.from_xml(x).to_extra_specs() for x in xml],
                  [Policy.from_extra_specs(s).to_extra_specs()
                   for s in specs]]))
''', json.dumps([docs, specs]).encode())
    want = [p.to_extra_specs() for p in POLICIES]
    assert got == [want, want]


def test_this_release_reads_what_the_previous_one_writes(previous):
    got = in_previous(previous, '''
import json
from nova_tlbbalance.policy import Policy
specs = json.load(sys.stdin)
print(json.dumps([Policy.from_extra_specs(s).to_xml() for s in specs]))
''', json.dumps([p.to_extra_specs() for p in POLICIES]).encode())
    for xml, want in zip(got, POLICIES):
        p = Policy.from_xml(xml)
        assert p == want and p.unknown == ()


HOOK = '''
import json
from nova_tlbbalance.hook import main
sys.stdout.write(json.dumps(main.main(['vm1', 'started', 'begin', '-'],
                                      sys.stdin.buffer, sys.stdout.buffer)))
'''


def test_previous_hook_registers_what_this_driver_wrote(
        previous, fake):  # noqa: F811
    # N's driver code (guest_config) made the domain XML; N-1's hook,
    # with the same fake host, registers it
    d = load_module(fake)
    pol = Policy(mode='balance', strict=True, params={'samples': 7})
    plain = domain().decode()
    plain = plain[:plain.index('<metadata>')] + plain[
        plain.index('</metadata>') + len('</metadata>'):]
    xml = guest_config.apply_to_domain_xml(plain, pol, huge_page_kib=2048)
    assert in_previous(previous, HOOK, xml.encode()) == 0
    rec = fake.records()[-1]
    assert rec['result'] == 'registered as vm1 (mode balance)', rec
    assert (d / 'samples').read_text() == '7'


def test_previous_release_predates_the_contract(
        previous, fake):  # noqa: F811
    """What N-1 does with a name a later release adds: the reason hosts
    go to N before a flavor uses any name newer than N (docs/upgrade.md,
    "Order of hosts"). N manages the same domain."""
    load_module(fake)
    newer = domain().replace(b'strict=', b'colour="red" strict=')
    assert in_previous(previous, HOOK, newer) == 0
    rec = fake.records()[-1]
    assert rec['result'].startswith('bad policy'), rec   # N-1: unmanaged
    assert 'colour' in rec['result']
    assert run('started', newer)[0] == 0
    assert fake.records()[-1]['result'] == 'registered as vm1 (mode balance)'


DRIVER = '''
import json
from types import SimpleNamespace
from nova_tlbbalance import driver
specs = json.load(sys.stdin)
try:
    p = driver.instance_policy(SimpleNamespace(
        flavor=SimpleNamespace(extra_specs=specs), uuid='x'))
    print(json.dumps(['ok', p.to_extra_specs()]))
except Exception as exc:
    print(json.dumps([type(exc).__name__, str(exc)]))
'''


def test_drivers_of_both_releases_on_each_others_flavors(previous):
    for pol in POLICIES:
        specs = pol.to_extra_specs()
        assert in_previous(previous, DRIVER, json.dumps(specs).encode()) \
            == ['ok', specs]
    # a key newer than both: N-1 aborts the build (before the contract),
    # N builds it managed with what it knows
    newer = {'tlbbalance:mode': 'monitor', 'tlbbalance:colour': 'red'}
    kind, why = in_previous(previous, DRIVER, json.dumps(newer).encode())
    assert kind == 'TLBBalancePolicyInvalid' and 'tlbbalance:colour' in why

    class Instance:
        class flavor:
            extra_specs = newer
    assert driver.instance_policy(Instance) == Policy(mode='monitor')
