# SPDX-License-Identifier: Apache-2.0
"""Bad variables are refused before the role touches a node.

Types and choices are checked by Ansible itself from the role's
meta/argument_specs.yml (the "Validating arguments against arg spec"
step, before any task); the few checks across variables are an assert
that runs on the controller. Both run here against localhost with the
host unreachable on purpose (loopback port 9, nothing listens): they
fail on the controller before any connection, which the test checks (no
role task past the checks started); a check that let a bad value through
would end "unreachable" instead, and nothing could reach this machine.
"""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PLAYBOOK = os.path.join(REPO, 'ansible', 'site.yml')
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable),
                            'ansible-playbook')


@pytest.fixture(scope='module')
def ansible_dir(tmp_path_factory):
    """Ansible's own state (home, temp, SSH control sockets) for this
    module, not ~/.ansible."""
    return tmp_path_factory.mktemp('ansible')


def playbook(ansible_dir, **extra):
    ev = {'tlbbalance_hosts': 'all', 'ansible_become': False,
          'ansible_python_interpreter': sys.executable,
          'tlbbalance_module_src': '/nonexistent'}
    ev.update(extra)
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_HOME=str(ansible_dir / 'home'),
               ANSIBLE_LOCAL_TEMP=str(ansible_dir / 'tmp'),
               ANSIBLE_SSH_CONTROL_PATH_DIR=str(ansible_dir / 'cp'))
    p = subprocess.run([PLAYBOOK_BIN, '-i', 'node.invalid,', '-e',
                        'ansible_host=127.0.0.1 ansible_port=9', PLAYBOOK,
                        '-e', json.dumps(ev)], env=env,
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


@pytest.mark.parametrize('var,value,says', [
    ('tlbbalance_module_install', 'rpm',
     'tlbbalance_module_install must be one of: dkms, deb, prebuilt, none, '
     'got: rpm'),
    ('tlbbalance_restart', 'systemd',
     'tlbbalance_restart must be one of: service, command, none'),
    ('tlbbalance_module_params', 5, 'tlbbalance_module_params'),
    ('tlbbalance_hugepages', [512], 'tlbbalance_hugepages'),
    ('tlbbalance_module_load', 'perhaps', 'tlbbalance_module_load'),
])
def test_arg_spec_refuses_before_any_task(ansible_dir, var, value, says):
    rc, out = playbook(ansible_dir, **{var: value})
    assert rc != 0, out[-2000:]
    assert 'Validating arguments against arg spec' in out, out[-2000:]
    assert says in out, out[-2000:]
    assert 'TASK [tlbbalance : Check the variables' not in out, out[-2000:]
    assert 'UNREACHABLE' not in out, out[-2000:]


@pytest.mark.parametrize('extra,says', [
    ({'tlbbalance_module_install': 'dkms', 'tlbbalance_module_src': ''},
     "tlbbalance_module_install=dkms needs tlbbalance_module_src"),
    ({'tlbbalance_module_install': 'prebuilt'},
     "module_ko=''"),
    ({'tlbbalance_module_install': 'deb'}, "module_deb=''"),
    ({'tlbbalance_package_install': 'deb'}, "package_deb=''"),
    ({'tlbbalance_module_install': 'deb',
      'tlbbalance_apt_repository': 'apt.example.com/tlbbalance'},
     "apt_repository='apt.example.com/tlbbalance'"),
    ({'tlbbalance_provider_traits': ['rack_a']}, "provider_traits=['rack_a']"),
])
def test_checks_across_variables_name_the_culprit(ansible_dir, extra, says):
    rc, out = playbook(ansible_dir, **extra)
    assert rc != 0, out[-2000:]
    assert says in out, out[-2000:]
    assert 'TASK [tlbbalance : Install the nova-tlbbalance' not in out
    assert 'TASK [tlbbalance : Build, install and load' not in out
    assert 'UNREACHABLE' not in out, out[-2000:]
