"""Immutable records, declared like frozen dataclasses, made without writing code at import.

`dataclasses.dataclass` writes each class's `__init__`, `__eq__`, `__hash__`, `__repr__` and
frozen `__setattr__` as source text and compiles it when the module is imported. flake8 imports
the hazard registry and its vocabulary on every run that meets a selector (`lint_plugin.checks`),
and those are records: a `Scenario` of fifty-five inputs, its `Condition`s, a `Hazard` and its
`Evidence`. As dataclasses they cost such a run some 50 M instructions before it analyses
anything, a sixth of what TEA may add to flake8 in all. A `Record` subclass is declared the same
way (annotated fields, defaults as class attributes, an optional `__post_init__`) and gets its
methods from here, generic over the class's field names, which the subclass learns once when it
is defined.

Equality, hashing and `repr` are a frozen dataclass's: the fields in order, compared and hashed
as a tuple, only between instances of the same class. What `dataclasses.fields`, `replace` and
`asdict` did is `FIELDS`, `replace` and `as_dict`.

`typing.NamedTuple` compiles a `__new__` of its own for each class too (some 0.8 M instructions
each; sixteen of them in what flake8 imports). A `TupleRecord` subclass is declared the same way
and is the same kind of object (a tuple, its fields read in C, `_replace`, `_fields`), its
`__new__` generic over the field names.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, ClassVar

try:  # what `collections.namedtuple` reads a field with
    from _collections import _tuplegetter
except ImportError:  # pragma: no cover - another Python implementation
    _tuplegetter = lambda index, doc: property(operator.itemgetter(index), doc=doc)  # noqa: E731


class FrozenRecordError(AttributeError):
    """An assignment to a record's field (records are immutable)."""


class Record:
    """Base class of immutable records (see the module docstring)."""

    #: The field names, in declaration order (a base class's first).
    FIELDS: ClassVar[tuple[str, ...]] = ()
    #: The fields that have a default, and it.
    DEFAULTS: ClassVar[dict[str, Any]] = {}
    #: The fields without a default.
    _required: ClassVar[tuple[str, ...]] = ()
    #: The field names as a set, to tell a field from another name.
    _field_names: ClassVar[frozenset[str]] = frozenset()
    #: The fields' values of a record as a tuple, read in C (`operator.attrgetter`).
    _values: ClassVar[Callable[[Any], tuple[Any, ...]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = list(cls.FIELDS)
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if "ClassVar" not in str(annotation) and name not in fields:
                fields.append(name)
        cls.FIELDS = tuple(fields)
        cls._field_names = frozenset(fields)
        cls.DEFAULTS = {name: getattr(cls, name) for name in fields if hasattr(cls, name)}
        cls._required = tuple(name for name in fields if name not in cls.DEFAULTS)
        getter = operator.attrgetter(*fields) if fields else (lambda record: ())
        cls._values = staticmethod(getter if len(fields) != 1 else lambda r: (getter(r),))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self.FIELDS
        if len(args) > len(fields):
            raise TypeError(
                f"{type(self).__name__}() takes {len(fields)} arguments, {len(args)} given"
            )
        given = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in self._field_names:
                raise TypeError(f"{type(self).__name__}() got an unexpected argument {name!r}")
            if name in given:
                raise TypeError(f"{type(self).__name__}() got {name!r} twice")
            given[name] = value
        missing = [name for name in self._required if name not in given]
        if missing:
            raise TypeError(f"{type(self).__name__}() missing {', '.join(map(repr, missing))}")
        values = self.__dict__
        values.update(self.DEFAULTS)
        values.update(given)
        post_init = getattr(self, "__post_init__", None)
        if post_init is not None:
            post_init()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values(self) == self._values(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__qualname__}({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenRecordError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field {name!r}")

    def _set(self, name: str, value: Any) -> None:
        """Set a field while the record is being made (in `__post_init__`)."""
        self.__dict__[name] = value

    def replace(self, **changes: Any) -> Record:
        """A copy with `changes` (`dataclasses.replace`)."""
        values = {name: getattr(self, name) for name in self.FIELDS}
        values.update(changes)
        return type(self)(**values)

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, records in them (in tuples, lists and dicts too) as dicts
        (`dataclasses.asdict`)."""
        return {name: _plain(getattr(self, name)) for name in self.FIELDS}


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.as_dict()
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(_plain(item) for item in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(item) for item in value)
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    return value


class _TupleRecordType(type):
    """Gives each `TupleRecord` subclass its fields, read in C, and no instance `__dict__`."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
        namespace.setdefault("__slots__", ())
        fields = tuple(namespace.get("__annotations__", ()))
        defaults = {name: namespace.pop(name) for name in fields if name in namespace}
        if any(field in defaults for field in fields[: len(fields) - len(defaults)]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        cls = super().__new__(mcls, name, bases, namespace)
        if bases != (tuple,):
            cls._fields, cls._field_defaults = fields, defaults
            for index, field in enumerate(fields):
                setattr(cls, field, _tuplegetter(index, f"Field {index}: {field}."))
        return cls


class TupleRecord(tuple, metaclass=_TupleRecordType):
    """Base class of tuple records, declared like `typing.NamedTuple` (see the module
    docstring): annotated fields, defaults as class attributes, after those without."""

    #: The field names, in declaration order, and the defaults of those that have one.
    _fields: ClassVar[tuple[str, ...]] = ()
    _field_defaults: ClassVar[dict[str, Any]] = {}

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != len(cls._fields):
            args = cls._arguments(args, kwargs)
        return tuple.__new__(cls, args)

    @classmethod
    def _arguments(cls, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Every field's value, from positional and keyword arguments and the defaults."""
        fields, name = cls._fields, cls.__name__
        if len(args) > len(fields):
            raise TypeError(f"{name}() takes {len(fields)} arguments, {len(args)} given")
        given = {**cls._field_defaults, **dict(zip(fields, args))}
        for field, value in kwargs.items():
            if field not in fields:
                raise TypeError(f"{name}() got an unexpected argument {field!r}")
            if field in fields[: len(args)]:
                raise TypeError(f"{name}() got {field!r} twice")
            given[field] = value
        if len(given) < len(fields):
            missing = [field for field in fields if field not in given]
            raise TypeError(f"{name}() missing {', '.join(map(repr, missing))}")
        return tuple(map(given.__getitem__, fields))

    def _replace(self, **changes: Any) -> Any:
        """A copy with `changes` (`namedtuple._replace`)."""
        values = tuple(changes.pop(field, value) for field, value in zip(self._fields, self))
        if changes:
            raise TypeError(f"{type(self).__name__} has no field {min(changes)!r}")
        return tuple.__new__(type(self), values)

    def _asdict(self) -> dict[str, Any]:
        """The fields by name (`namedtuple._asdict`)."""
        return dict(zip(self._fields, self))

    def __getnewargs__(self) -> tuple[Any, ...]:  # pickled as its values (`copy`, `pickle`)
        return tuple(self)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
        return f"{type(self).__qualname__}({fields})"
