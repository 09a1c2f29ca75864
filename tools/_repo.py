# SPDX-License-Identifier: Apache-2.0
"""This checkout's root on sys.path: the tools import nova_tlbbalance from
the tree they belong to, from any cwd, whether or not the package is
installed.  tools/ itself, which the tools put on sys.path to import this,
holds what they share with the tests and nothing ships: ``tlbbwait``.

The one way for a tool: put ``tools/`` on sys.path and import this::

    sys.path.insert(0, <this checkout>/tools)
    from _repo import REPO  # noqa: E402  (the checkout on sys.path)

tools/node/node.py, tools/cloud/procs.py and tests/ansible/fleet.py do;
the modules imported after them (tools/node/scenario.py, the cloud's
modules) change no path.  Inside the node, nova_tlbbalance is on
Debian's python3 path already (node-init.sh's tlbb-node.pth), which is
what tools/node/agent.py, relay.py and vport.py run under.

The checkout is appended, so an installed nova_tlbbalance of the same
tree (tox's develop install) is not shadowed; a tool that must run the
checkout's code whatever is installed puts REPO first itself
(tools/cloud/cloud.py).
"""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.append(REPO)
