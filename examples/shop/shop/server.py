"""The shop's HTTP API (JSON over http.server, standard library only)."""

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from shop import catalog
from shop.cart import Cart
from shop.catalog import UnknownProduct
from shop.orders import EmptyCart, create_order


class Handler(BaseHTTPRequestHandler):
    server_version = "shop/1"

    def log_message(self, fmt, *args):  # keep the harness output short
        pass

    def _send(self, status: int, body: dict | list) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self._send(200, {"ok": True})
        elif self.path == "/products":
            self._send(200, catalog.listing())
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/orders":
            self._send(404, {"error": "not found"})
            return
        length = int(self.headers.get("Content-Length", "0"))
        try:
            payload = json.loads(self.rfile.read(length) or b"{}")
            cart = Cart()
            for line in payload.get("lines", []):
                cart.add(line["product"], int(line.get("quantity", 1)))
            order = create_order(cart)
        except (UnknownProduct, EmptyCart, ValueError, KeyError) as e:
            self._send(400, {"error": str(e)})
            return
        self._send(201, order)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"shop listening on 127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
