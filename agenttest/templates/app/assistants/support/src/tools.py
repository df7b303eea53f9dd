"""The support assistant's tools: one Python function per tool in package.yao, called as fn(ctx, **arguments)."""

ORDERS = {"1042": "shipped", "2001": "being packed"}


def lookup_order(ctx, order_id):
    """Look an order up; an unknown number is an error the model sees (and should explain)."""
    order_id = str(order_id).lstrip("#")
    if order_id not in ORDERS:
        raise LookupError(f"no order {order_id}")
    return {"order_id": order_id, "status": ORDERS[order_id]}
