# SPDX-License-Identifier: Apache-2.0
"""nova_tlbbalance.record: what the hook's classes took from dataclasses,
held to dataclasses' own behaviour for the same class."""

import dataclasses

import pytest

from nova_tlbbalance import record


def both(frozen=False):
    """The same class made by dataclasses and by record."""
    out = []
    for deco, fld in ((dataclasses.dataclass(frozen=frozen),
                       dataclasses.field),
                      (record.record(frozen=frozen), record.field)):
        class Point:
            x: int
            y: int = 2
            tags: list = fld(default_factory=list)
            note: str = fld(default='', compare=False, repr=False)
        out.append(deco(Point))
    return out


@pytest.mark.parametrize('frozen', [False, True])
def test_same_behaviour_as_dataclasses(frozen):
    dc, rc = both(frozen)
    for args, kw in (((1,), {}), ((1, 5), {'note': 'n'}),
                     ((), {'x': 3, 'tags': ['a']})):
        a, b = dc(*args, **kw), rc(*args, **kw)
        assert repr(a) == repr(b)
        assert dataclasses.asdict(a) == record.asdict(b)
        assert (a.x, a.y, a.tags, a.note) == (b.x, b.y, b.tags, b.note)
    assert rc(1) == rc(1, note='other') and rc(1) != rc(2)
    assert rc(1).tags is not rc(1).tags        # a new list each time
    assert rc(1) != (1, 2, [])
    if frozen:
        assert hash(rc(1, tags=())) == hash(rc(1, tags=(), note='x'))
        with pytest.raises(AttributeError, match="field 'x' of a frozen"):
            rc(1).x = 3
    else:
        assert rc.__hash__ is None
        b = rc(1)
        b.x = 4
        assert b.x == 4
    assert record.fields(rc) == ('x', 'y', 'tags', 'note')


def test_post_init_and_bad_calls():
    @record.record
    class Checked:
        n: int

        def __post_init__(self):
            if self.n < 0:
                raise ValueError('n: %d is negative' % self.n)
    assert Checked(3).n == 3
    with pytest.raises(ValueError, match='n: -1 is negative'):
        Checked(-1)
    with pytest.raises(TypeError, match="missing argument 'n'"):
        Checked()
    with pytest.raises(TypeError, match="unexpected argument"):
        Checked(1, m=2)
    with pytest.raises(TypeError, match="argument 'n' twice"):
        Checked(1, n=2)
    with pytest.raises(TypeError, match='takes 1 arguments, 2 given'):
        Checked(1, 2)
    with pytest.raises(TypeError, match="'b' with a default before"):
        @record.record
        class Bad:
            b: int = 1
            c: int
    with pytest.raises(ValueError, match='both given'):
        record.field(default=1, default_factory=list)
