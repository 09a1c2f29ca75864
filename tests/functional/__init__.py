# SPDX-License-Identifier: Apache-2.0
"""Functional tests: nova's own harness with the driver plugin.

nova's harness runs its services as eventlet greenthreads of one OS thread,
so eventlet must patch ``threading`` before anything defines a thread-local
class. nova's own package does it first thing
(``nova/tests/functional/__init__.py``). pytest imports this package before
``conftest.py``, whose ``from nova import test`` imports oslo.db (and
oslo.context) before nova's harness gets to patch. oslo.db's per-thread
transaction slot (``enginefacade._TransactionContextTLocal``, a
``threading.local`` subclass kept on each RequestContext) would then be one
slot shared by all greenthreads. The compute's build (``instance_claim`` ->
``ComputeNode.save()``, a writer) and its service heartbeat
(``Service.save()``, a reader first) use the same RequestContext; when they
overlap, the build fails with "Can't upgrade a READER transaction to a
WRITER mid-transaction". conftest.py checks that the patch came first.
"""

from nova import monkey_patch

if hasattr(monkey_patch, 'patch'):
    monkey_patch.patch()        # nova >= 32: patching is asked for
# nova 31 (2025.1) patches when nova.monkey_patch is imported
