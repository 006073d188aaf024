"""A registry of named objects (variants, activations): one place to add one, one clear error for an
unknown name.
"""

from __future__ import annotations

from bayes_slr.errors import ConfigError


class Registry[Item]:
    """Named objects of one kind, in registration order.

    Parameters
    ----------
    kind : what the objects are, as a parameter name (``"variant"``, ``"activation"``): it names the
        parameter in error messages.
    item_type : the class every registered object must be an instance of; its ``name`` attribute is
    the key.
    """

    def __init__(self, kind: str, item_type: type) -> None:
        self.kind, self.item_type = kind, item_type
        self._items: dict[str, Item] = {}

    def register(self, item: Item) -> Item:
        """Add ``item`` under its ``name`` (replacing one of the same name) and return it."""
        if not isinstance(item, self.item_type):
            raise ConfigError(
                f"a {self.kind} must be a {self.item_type.__name__}, got {type(item).__name__}"
            )
        self._items[item.name] = item
        return item

    def unregister(self, name: str) -> None:
        """Remove the object called ``name`` (tests that add a toy one clean up with it)."""
        self._items.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._items)

    def get(self, name: object) -> Item:
        """The object called ``name``; ``ConfigError`` listing the accepted names otherwise."""
        if not isinstance(name, str) or name not in self._items:
            raise ConfigError(f"{self.kind} must be one of {', '.join(self._items)}; got {name!r}")
        return self._items[name]

    def items(self) -> tuple[Item, ...]:
        """The registered objects, in registration order."""
        return tuple(self._items.values())
