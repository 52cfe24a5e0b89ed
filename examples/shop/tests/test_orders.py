import unittest

from shop.cart import Cart
from shop.orders import EmptyCart, create_order


class OrdersTest(unittest.TestCase):
    def test_order_has_total_and_id(self):
        cart = Cart()
        cart.add("pot")
        order = create_order(cart)
        self.assertGreaterEqual(order["id"], 1)
        self.assertEqual(order["total_cents"], 3900)

    def test_empty_cart_is_refused(self):
        with self.assertRaises(EmptyCart):
            create_order(Cart())


if __name__ == "__main__":
    unittest.main()
