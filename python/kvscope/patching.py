# SPDX-License-Identifier: GPL-3.0-or-later
"""Replaces methods on classes and puts back exactly what was there.

Why a module of its own: the recorder's promise is that `transformers.cache_utils` is left as it was
found, also after an exception. Every replacement is recorded as (class, name, the object that was in
the class's own `__dict__`), and `restore` puts those very objects back (or removes the name where the
class only inherited it), then checks that it did.
"""

import functools


class Patches:
    """The replacements made so far, restorable in reverse order."""

    def __init__(self):
        self._made = []

    def wrap(self, cls, name, make_wrapper) -> bool:
        """Replaces `cls.name` (only where the class defines it itself) by make_wrapper(original)."""
        original = cls.__dict__.get(name)
        if original is None or not callable(original) or isinstance(original, (staticmethod, classmethod)):
            return False
        wrapper = functools.wraps(original)(make_wrapper(original))
        wrapper.__kvscope_original__ = original
        self._made.append((cls, name, original))
        setattr(cls, name, wrapper)
        return True

    def set_instance_attribute(self, obj, name, value) -> None:
        """Shadows an attribute on one object (the model's forward); restored by removal or reassignment."""
        had = name in vars(obj)
        self._made.append((obj, name, vars(obj)[name] if had else _ABSENT))
        setattr(obj, name, value)

    def restore(self) -> None:
        """Puts back every original, newest first; raises if any class was not left as found."""
        wrong = []
        while self._made:
            owner, name, original = self._made.pop()
            if original is _ABSENT:
                if name in vars(owner):
                    delattr(owner, name)
                continue
            setattr(owner, name, original)
            if vars(owner).get(name) is not original:
                wrong.append("%s.%s" % (getattr(owner, "__name__", type(owner).__name__), name))
        if wrong:
            raise RuntimeError("kvscope: could not restore " + ", ".join(wrong))

    def __len__(self):
        return len(self._made)


_ABSENT = object()


def all_subclasses(root) -> list:
    """`root` and every class derived from it that exists now, each once, bases first."""
    seen, order, queue = set(), [], [root]
    while queue:
        cls = queue.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        order.append(cls)
        queue.extend(cls.__subclasses__())
    return order
