"""Let pytest run nova's TestCase-based functional tests.

pytest sets the test method as an instance attribute for the duration of the
run and deletes it afterwards; nova's ``TestCase._clear_attrs`` cleanup
deletes every public instance attribute first, so pytest's ``delattr`` then
fails with AttributeError. Keep that one attribute through the cleanup.
"""

from nova import test as nova_test

_orig_clear_attrs = nova_test.TestCase._clear_attrs


def _clear_attrs(self):
    name = self._testMethodName
    keep = self.__dict__.get(name)
    _orig_clear_attrs(self)
    if keep is not None:
        self.__dict__[name] = keep


nova_test.TestCase._clear_attrs = _clear_attrs
