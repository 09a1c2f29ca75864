# SPDX-License-Identifier: Apache-2.0
"""docs/adding-a-flavor-key.md's worked example, derived and run.

The example is the patch docs/examples/flavor-key-locked.patch (a
``tlbbalance:locked`` key that adds ``<locked/>`` to the guest's
``<memoryBacking>``). This test counts the files it touches outside tests
and docs (the issue's goal: at most 4), then applies it to a copy of the
package, the sample config and the docs and checks that the key works end
to end there: nova-api's table takes it, the policy carries it through the
domain metadata, the guest XML gets ``<locked/>``, the compute host's
``[tlbbalance] default_locked`` exists, and the generated pages (the
config sample, the extra specs page) in the patch are what the generators
print.
"""

import os
import shutil
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PATCH = os.path.join(TOP, 'docs', 'examples', 'flavor-key-locked.patch')
GOAL = 4


def touched():
    """The files the patch touches, in its order."""
    with open(PATCH) as f:
        return [ln.split()[2][2:] for ln in f if ln.startswith('diff --git')]


def outside_tests_and_docs(files):
    return [f for f in files if not f.startswith(('tests/', 'docs/'))]


def test_example_touches_at_most_four_files_outside_tests_and_docs():
    files = outside_tests_and_docs(touched())
    print('%d files: %s' % (len(files), ', '.join(files)))
    assert files == ['etc/tlbbalance.conf.sample',
                     'nova_tlbbalance/extra_specs.py',
                     'nova_tlbbalance/guest_config.py',
                     'nova_tlbbalance/policy.py']
    assert len(files) <= GOAL


CHECK = r'''
import io, sys
from oslo_config import cfg, generator
from nova_tlbbalance import conf, extra_specs as es, extra_specs_doc
from nova_tlbbalance import guest_config
from nova_tlbbalance.policy import Policy

assert es.spec('tlbbalance:locked').parse('yes') == 'true'
pol = Policy.from_extra_specs({'tlbbalance:mode': 'monitor',
                               'tlbbalance:locked': 'true'})
assert pol.locked is True
assert Policy.from_xml(pol.to_xml()) == pol
assert 'locked' not in Policy(mode='monitor').to_xml()   # old readers
xml = guest_config.apply_to_domain_xml(
    "<domain type='qemu'><name>x</name><memory unit='KiB'>1048576</memory>"
    "<vcpu>1</vcpu></domain>", pol, huge_page_kib=2048)
assert '<locked/>' in xml, xml
c = cfg.ConfigOpts()
conf.register_opts(c)
c([], project='test')
c.set_override('default_locked', True, group='tlbbalance')
assert Policy.from_extra_specs({'tlbbalance:mode': 'off'},
                               conf.defaults(c)).locked is True
with open('docs/extra-specs.md') as f:
    assert f.read() == extra_specs_doc.render(), 'extra-specs.md'
generator.main(['--namespace', 'nova_tlbbalance', '--wrap-width', '79',
                '--output-file', 'sample.new'])
assert open('sample.new').read() == open(
    'etc/tlbbalance.conf.sample').read(), 'conf sample'
print('ok')
'''


def test_example_applies_and_the_key_works_end_to_end(tmp_path):
    for d in ('nova_tlbbalance', 'etc', 'docs'):
        shutil.copytree(os.path.join(TOP, d), tmp_path / d, symlinks=False,
                        ignore=shutil.ignore_patterns('__pycache__'))
    subprocess.run(['git', 'apply', PATCH], cwd=tmp_path, check=True)
    p = subprocess.run([sys.executable, '-c', CHECK], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert p.returncode == 0 and p.stdout.strip() == 'ok', p.stderr
