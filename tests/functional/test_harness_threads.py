# SPDX-License-Identifier: Apache-2.0
"""The harness keeps one DB transaction per greenthread (see __init__.py).

nova's ServiceFixture starts a compute with one RequestContext that both its
service heartbeat (``Service.save()``: a reader, then a writer) and its
resource tracker's ComputeNode (``instance_claim`` -> ``ComputeNode.save()``:
a writer) keep using, from different greenthreads. This is that overlap made
deterministic: it fails with "Can't upgrade a READER transaction to a WRITER
mid-transaction" when oslo.db's transaction slot is shared by greenthreads.
"""

import threading

from nova import context as nova_context
from nova.db.main import api as main_db_api
from nova import test
import sqlalchemy as sa


class TestTransactionPerGreenthread(test.TestCase):

    def test_reader_in_one_thread_does_not_block_writer_in_another(self):
        ctxt = nova_context.get_admin_context()
        cm = main_db_api.get_context_manager(ctxt)
        in_reader = threading.Event()
        release = threading.Event()

        def heartbeat():
            with cm.reader.using(ctxt):
                in_reader.set()
                release.wait(30)

        thread = threading.Thread(target=heartbeat)
        thread.start()
        try:
            self.assertTrue(in_reader.wait(30))
            with cm.writer.using(ctxt) as session:
                self.assertEqual(1, session.execute(
                    sa.text('SELECT 1')).scalar())
        finally:
            release.set()
            thread.join(30)
