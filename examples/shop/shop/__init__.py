"""A tiny shop: a catalog, a cart and orders, served over HTTP."""
