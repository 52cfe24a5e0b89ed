import unittest

from shop.cart import Cart
from shop.catalog import UnknownProduct


class CartTest(unittest.TestCase):
    def test_total(self):
        cart = Cart()
        cart.add("tea", 2)
        cart.add("mug")
        self.assertEqual(cart.total_cents(), 2 * 450 + 1200)

    def test_unknown_product(self):
        with self.assertRaises(UnknownProduct):
            Cart().add("coffee")

    def test_quantity_must_be_positive(self):
        with self.assertRaises(ValueError):
            Cart().add("tea", 0)


if __name__ == "__main__":
    unittest.main()
