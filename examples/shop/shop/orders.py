"""Orders: a cart turned into a numbered order."""

import itertools

from shop.cart import Cart

_next_id = itertools.count(1)


class EmptyCart(ValueError):
    """Raised when an order is placed for an empty cart."""


def create_order(cart: Cart) -> dict:
    """Places an order for everything in the cart."""
    if cart.is_empty():
        raise EmptyCart("cannot order an empty cart")
    return {
        "id": next(_next_id),
        "lines": dict(cart.lines),
        "total_cents": cart.total_cents(),
    }
