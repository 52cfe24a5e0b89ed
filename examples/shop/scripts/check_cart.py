"""Acceptance check: the cart refuses a product the catalog does not have."""

import sys

from shop.cart import Cart

try:
    Cart().add("coffee")
except KeyError:
    print("unknown product refused")
    sys.exit(0)
print("the cart accepted a product the catalog does not have", file=sys.stderr)
sys.exit(1)
