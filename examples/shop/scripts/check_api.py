"""Acceptance checks against the running shop API; exit 0 means the criterion holds."""

import json
import os
import sys
import urllib.error
import urllib.request

BASE = f"http://127.0.0.1:{os.environ.get('SHOP_PORT', '8765')}"


def request(method: str, path: str, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def products_listed() -> None:
    status, body = request("GET", "/products")
    assert status == 200, f"GET /products returned {status}"
    assert {p["id"] for p in body} >= {"tea", "mug", "pot"}, f"missing products: {body}"


def order_created() -> None:
    status, body = request("POST", "/orders", {"lines": [{"product": "tea", "quantity": 2}]})
    assert status == 201, f"POST /orders returned {status}: {body}"
    assert isinstance(body.get("id"), int), f"no order id in {body}"
    assert body["total_cents"] == 900, f"wrong total in {body}"


def empty_order_refused() -> None:
    status, body = request("POST", "/orders", {"lines": []})
    assert status == 400, f"an empty order returned {status}: {body}"


CHECKS = {
    "products-listed": products_listed,
    "order-created": order_created,
    "empty-order-refused": empty_order_refused,
}

if __name__ == "__main__":
    name = sys.argv[1]
    try:
        CHECKS[name]()
    except AssertionError as e:
        print(f"{name}: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"{name}: ok")
