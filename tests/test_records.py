"""`selector_patch.records.TupleRecord` behaves as the `typing.NamedTuple` it replaces."""

import copy
import pickle
from typing import NamedTuple

import pytest

from selector_patch.records import TupleRecord


class Point(TupleRecord):
    """A record with a default and a method."""

    x: int
    y: str
    z: object = None

    @property
    def doubled(self) -> int:
        return 2 * self.x


class NamedPoint(NamedTuple):
    x: int
    y: str
    z: object = None


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((1, "a"), {}), ((1, "a", 3), {}), ((1,), {"y": "b"}), ((), {"z": 2, "y": "c", "x": 0})],
)
def test_made_and_read_as_a_named_tuple_is(args, kwargs):
    mine, theirs = Point(*args, **kwargs), NamedPoint(*args, **kwargs)
    assert tuple(mine) == tuple(theirs) and mine == theirs and hash(mine) == hash(theirs)
    assert (mine.x, mine.y, mine.z) == (theirs.x, theirs.y, theirs.z)
    assert mine._asdict() == theirs._asdict()
    assert mine._replace(z=5) == theirs._replace(z=5) and type(mine._replace(z=5)) is Point
    assert repr(mine) == repr(theirs).replace("NamedPoint", "Point")
    assert Point._fields == NamedPoint._fields
    assert Point._field_defaults == NamedPoint._field_defaults


@pytest.mark.parametrize(
    ("args", "kwargs", "says"),
    [
        ((1,), {}, "missing 'y'"),
        ((1, "a", 3, 4), {}, "takes 3 arguments"),
        ((1, "a"), {"w": 2}, "unexpected argument 'w'"),
        ((1, "a"), {"x": 2}, "got 'x' twice"),
    ],
)
def test_wrong_arguments_raise_type_errors(args, kwargs, says):
    with pytest.raises(TypeError, match=says):
        Point(*args, **kwargs)
    with pytest.raises(TypeError):
        NamedPoint(*args, **kwargs)


def test_a_record_is_a_slotted_tuple_that_copies_and_pickles():
    point = Point(2, "b")
    assert isinstance(point, tuple) and not hasattr(point, "__dict__")
    assert point.doubled == 4 and Point.__doc__ == "A record with a default and a method."
    assert pickle.loads(pickle.dumps(point)) == point == copy.deepcopy(point)
    with pytest.raises(AttributeError):
        point.x = 3
    with pytest.raises(TypeError, match="no field 'w'"):
        point._replace(w=1)


def test_a_field_without_a_default_may_not_follow_one_with_a_default():
    with pytest.raises(TypeError, match="without a default follows"):

        class Bad(TupleRecord):
            a: int = 0
            b: int
