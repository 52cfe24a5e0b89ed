#!/bin/sh
# Starts the shop's HTTP API in the foreground.
exec python3 -m shop.server --port "${SHOP_PORT:-8765}"
