"""The host's capabilities, as the shop agent's tools: the catalogue fixture, the customer's choice kept in the
case's world, and an order — the one external write — refused unless the case's policy allows it."""

import json
import os

CATALOGUE = os.path.join(os.path.dirname(__file__), "..", "catalogue.json")


def _catalogue():
    with open(CATALOGUE, encoding="utf-8") as fh:
        return json.load(fh)


def search_products(ctx, query=""):
    return [p for p in _catalogue() if query.lower() in p["name"].lower()]


def select_product(ctx, product_id):
    product = next((p for p in _catalogue() if p["id"] == product_id), None)
    if product is None:
        raise ValueError(f"no product {product_id}")
    ctx.world["selected"] = product
    return product


def place_order(ctx, product_id):
    # the effect boundary: a read_only case may not create an external record
    if ctx.policy.get("write_policy") != "external":
        ctx.deny("placing an order writes an external record; this conversation is read_only")
    order = {"id": f"order-{len(ctx.world.setdefault('orders', [])) + 1}", "product_id": product_id}
    ctx.world["orders"].append(order)
    return order
