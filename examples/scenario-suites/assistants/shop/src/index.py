"""The observation's adapter (docs/formats-a.md): after each reply, the Next hook publishes what the turn opened
— a choice among the products it listed — and the facts it established: product.selected."""


def next(ctx, payload):
    published = {}
    for call in payload["tools"]:
        if call.get("error"):
            continue
        if call["name"] == "search_products":
            options = [{"id": p["id"], "label": p["name"]} for p in call["result"]]
            published["interaction"] = {"kind": "choice", "options": options}
        elif call["name"] == "select_product":
            published["facts"] = [{"type": "product.selected", "productId": call["result"]["id"]}]
        elif call["name"] == "place_order":
            published.setdefault("facts", []).append({"type": "order.placed", "orderId": call["result"]["id"]})
    return published or None
