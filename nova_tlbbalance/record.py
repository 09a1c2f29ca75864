# SPDX-License-Identifier: Apache-2.0
"""Plain records for the classes the libvirt hook imports.

What those classes took from :mod:`dataclasses` (an ``__init__`` from the
annotated fields with their defaults, ``__post_init__``, ``__eq__`` over
the compared fields, ``__repr__``, frozen instances that hash), without
its import: ``dataclasses`` imports ``inspect`` (and with it ``ast``,
``dis``, ``tokenize``, ``enum``...), about 15 ms of CPU in each of the
hook's two phases on the path of a tagged VM's start (docs/hook.md,
"Cost"). Only what this package uses: no inheritance between records, no
ordering, no ``dataclasses.fields``/``replace`` (:func:`asdict` is here).
"""

_MISSING = object()


class field:                        # noqa: N801 (dataclasses' spelling)
    """A field's default (``default`` or ``default_factory``) and whether
    it takes part in ``==`` and ``repr``."""

    __slots__ = ('name', 'default', 'default_factory', 'compare', 'repr')

    def __init__(self, default=_MISSING, default_factory=None, compare=True,
                 repr=True):        # noqa: A002 (dataclasses' spelling)
        if default is not _MISSING and default_factory is not None:
            raise ValueError('field: default and default_factory both given')
        self.name = None
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr


def _frozen_setattr(self, name, value):
    raise AttributeError('cannot assign to field %r of a frozen %s'
                         % (name, type(self).__name__))


def _frozen_delattr(self, name):
    raise AttributeError('cannot delete field %r of a frozen %s'
                         % (name, type(self).__name__))


def record(cls=None, *, frozen=False):
    """Class decorator: ``@record`` or ``@record(frozen=True)``."""
    if cls is None:
        return lambda c: _make(c, frozen)
    return _make(cls, frozen)


def _make(cls, frozen):
    fields = []
    for name in cls.__dict__.get('__annotations__', {}):
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, field) else field(default=value)
        f.name = name
        if f.default is _MISSING:
            if name in cls.__dict__:
                delattr(cls, name)
        else:
            setattr(cls, name, f.default)
        fields.append(f)
    required = False
    for f in reversed(fields):
        if f.default is _MISSING and f.default_factory is None:
            required = True
        elif required:
            raise TypeError('%s: field %r with a default before a field '
                            'without' % (cls.__name__, f.name))
    fields = tuple(fields)
    compared = tuple(f.name for f in fields if f.compare)
    shown = tuple(f.name for f in fields if f.repr)
    set_ = object.__setattr__

    def __init__(self, *args, **kwargs):
        if len(args) > len(fields):
            raise TypeError('%s() takes %d arguments, %d given'
                            % (cls.__name__, len(fields), len(args)))
        for i, f in enumerate(fields):
            if i < len(args):
                if f.name in kwargs:
                    raise TypeError('%s() got argument %r twice'
                                    % (cls.__name__, f.name))
                value = args[i]
            elif f.name in kwargs:
                value = kwargs.pop(f.name)
            elif f.default is not _MISSING:
                value = f.default
            elif f.default_factory is not None:
                value = f.default_factory()
            else:
                raise TypeError('%s() missing argument %r'
                                % (cls.__name__, f.name))
            set_(self, f.name, value)
        if kwargs:
            raise TypeError('%s() got unexpected argument(s) %s'
                            % (cls.__name__, ', '.join(sorted(kwargs))))
        post = getattr(self, '__post_init__', None)
        if post is not None:
            post()

    def __repr__(self):
        return '%s(%s)' % (cls.__qualname__, ', '.join(
            '%s=%r' % (n, getattr(self, n)) for n in shown))

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in compared)

    cls.__init__ = __init__
    cls.__eq__ = __eq__
    if '__repr__' not in cls.__dict__:
        cls.__repr__ = __repr__
    if frozen:
        cls.__setattr__ = _frozen_setattr
        cls.__delattr__ = _frozen_delattr
        cls.__hash__ = lambda self: hash(tuple(getattr(self, n)
                                               for n in compared))
    else:
        cls.__hash__ = None         # mutable and compared: not hashable
    cls._record_fields = fields
    return cls


def fields(obj):
    """The field names of a record (class or instance), in order."""
    return tuple(f.name for f in obj._record_fields)


def asdict(obj):
    """A record as a dict, records, lists, tuples and dicts inside it
    converted too (as dataclasses.asdict)."""
    if hasattr(type(obj), '_record_fields'):
        return {n: asdict(getattr(obj, n)) for n in fields(obj)}
    if isinstance(obj, (list, tuple)):
        return type(obj)(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return {asdict(k): asdict(v) for k, v in obj.items()}
    return obj
