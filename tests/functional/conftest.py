# SPDX-License-Identifier: Apache-2.0
"""Let pytest run nova's TestCase-based functional tests.

pytest sets the test method as an instance attribute for the duration of the
run and deletes it afterwards; nova's ``TestCase._clear_attrs`` cleanup
deletes every public instance attribute first, so pytest's ``delattr`` then
fails with AttributeError. Keep that one attribute through the cleanup.

It also refuses to run when eventlet patched ``threading`` after oslo.db
defined its per-thread transaction slot (see ``__init__.py``): greenthreads
would then share DB transactions and builds fail now and then.
"""

from oslo_db.sqlalchemy import enginefacade

from nova import monkey_patch
from nova import test as nova_test


def _is_patched():
    if hasattr(monkey_patch, 'is_patched'):
        return monkey_patch.is_patched()
    import eventlet.patcher     # nova 31 (2025.1): no is_patched() yet
    return eventlet.patcher.is_monkey_patched('thread')


def _check_oslo_db_slot_is_per_greenthread():
    if not _is_patched():
        return   # native threading mode: a native thread-local is right
    import eventlet.corolocal
    slot = enginefacade._TransactionContextTLocal
    if not issubclass(slot, eventlet.corolocal.local):
        raise RuntimeError(
            'oslo_db.sqlalchemy.enginefacade was imported before eventlet '
            'monkey patching, so its transaction slot %s is one native '
            'thread-local shared by all greenthreads; import '
            'tests.functional (which patches) before nova or oslo.db'
            % slot.__mro__[1])


_check_oslo_db_slot_is_per_greenthread()

_orig_clear_attrs = nova_test.TestCase._clear_attrs


def _clear_attrs(self):
    name = self._testMethodName
    keep = self.__dict__.get(name)
    _orig_clear_attrs(self)
    if keep is not None:
        self.__dict__[name] = keep


nova_test.TestCase._clear_attrs = _clear_attrs
