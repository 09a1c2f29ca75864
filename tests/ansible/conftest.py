"""The Ansible rollout session: ansible/site.yml run inside a compute node
in a box (tools/node), booted without the hook so that the role installs
it. Needs what tests/e2e needs; nothing is mocked, and nothing skips."""

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tools', 'node'))

import live  # noqa: E402
import node as nodelib  # noqa: E402

LIVE = live.LiveNode(os.path.join(REPO, 'out', 'test-logs'), 'ansible-node',
                     kernel=os.environ.get('TLBB_E2E_KERNEL', '6.1'),
                     hook=False)


@pytest.fixture(scope='session')
def node():
    LIVE.boot()
    yield LIVE
    status = LIVE.poweroff()
    assert status == 0, 'the node powered off with status %s' % status


@pytest.fixture(autouse=True)
def _node_alive(request):
    if 'node' in request.fixturenames:
        LIVE.revive()


def pytest_terminal_summary(terminalreporter):
    LIVE.report(terminalreporter)


@pytest.fixture(scope='session')
def payload():
    return nodelib.build_payload()
