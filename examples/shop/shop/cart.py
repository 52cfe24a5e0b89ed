"""A cart: product ids and quantities, priced from the catalog."""

from shop.catalog import price_of


class Cart:
    """Quantities by product id."""

    def __init__(self) -> None:
        self.lines: dict[str, int] = {}

    def add(self, product_id: str, quantity: int = 1) -> None:
        if quantity < 1:
            raise ValueError("quantity must be at least 1")
        price_of(product_id)  # unknown products are refused here, not at checkout
        self.lines[product_id] = self.lines.get(product_id, 0) + quantity

    def total_cents(self) -> int:
        return sum(price_of(pid) * qty for pid, qty in self.lines.items())

    def is_empty(self) -> bool:
        return not self.lines
