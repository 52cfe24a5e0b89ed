"""The product catalog: ids, names and prices in cents."""

PRODUCTS = {
    "tea": {"name": "Green tea", "price_cents": 450},
    "mug": {"name": "Stoneware mug", "price_cents": 1200},
    "pot": {"name": "Cast-iron teapot", "price_cents": 3900},
}


class UnknownProduct(KeyError):
    """Raised for a product id the catalog does not have."""


def price_of(product_id: str) -> int:
    """The price of one unit, in cents."""
    try:
        return PRODUCTS[product_id]["price_cents"]
    except KeyError as e:
        raise UnknownProduct(product_id) from e


def listing() -> list[dict]:
    """Every product with its id, sorted by id."""
    return [{"id": pid, **info} for pid, info in sorted(PRODUCTS.items())]
