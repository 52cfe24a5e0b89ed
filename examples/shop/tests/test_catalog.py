import unittest

from shop import catalog


class CatalogTest(unittest.TestCase):
    def test_price_of_known_product(self):
        self.assertEqual(catalog.price_of("tea"), 450)

    def test_unknown_product_is_refused(self):
        with self.assertRaises(catalog.UnknownProduct):
            catalog.price_of("coffee")

    def test_listing_is_sorted(self):
        ids = [p["id"] for p in catalog.listing()]
        self.assertEqual(ids, sorted(ids))


if __name__ == "__main__":
    unittest.main()
