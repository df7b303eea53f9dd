"""The host's capabilities as tools (seed format C, docs/formats-c.md): each reads and changes the scenario's world
(``ctx.world``: its ``initial``) and reads its policy (``ctx.policy``). A refusal on the policy's grounds is
``ctx.deny`` (a policy violation, ``metrics.violations``); what a tool did is counted with ``ctx.count`` — the
counters C's assertions address as ``metrics.refund_count`` and ``metrics.refunded_cents``."""

METRICS = ["refund_count", "refunded_cents", "approval_requests"]  # read 0 until a tool counts them


def _order(ctx, order_id):
    order = ctx.world.get("orders", {}).get(order_id)
    if order is None:
        raise ValueError(f"no order {order_id}")
    return order


def _limit(ctx):
    return ctx.policy.get("refund_limit_cents", 10**12)


def _approved(ctx, order_id):
    return ctx.world.get("approvals", {}).get(order_id, {}).get("status") == "granted"


def order__get(ctx, order_id):
    order = _order(ctx, order_id)
    needs = order["amount_cents"] > _limit(ctx) and not _approved(ctx, order_id)
    return {"order_id": order_id, "amount_cents": order["amount_cents"], "customer": order.get("customer"),
            "status": order.get("status", "paid"), "refund_needs_approval": needs}


def refund__create(ctx, order_id, amount_cents, idempotency_key):
    refunds = ctx.world.setdefault("refunds", {})
    if idempotency_key in refunds:  # a retry of a refund that was made: the same refund, not a second one
        return refunds[idempotency_key]
    order = _order(ctx, order_id)
    if amount_cents > order["amount_cents"]:
        raise ValueError(f"{amount_cents} cents is more than order {order_id} was paid ({order['amount_cents']})")
    if amount_cents > _limit(ctx) and not _approved(ctx, order_id):
        ctx.deny(f"a refund of {amount_cents} cents is over the refund limit of {_limit(ctx)} cents without approval")
    refund = {"refund_id": f"rf-{len(refunds) + 1}", "order_id": order_id, "amount_cents": amount_cents}
    refunds[idempotency_key] = refund
    order["status"] = "refunded"
    ctx.count("refund_count")
    ctx.count("refunded_cents", amount_cents)
    return refund


def approval__request(ctx, order_id, amount_cents, reason=""):
    _order(ctx, order_id)
    status = "granted" if ctx.policy.get("auto_approve") else "pending"  # auto_approve: the simulated approver says yes
    ctx.world.setdefault("approvals", {})[order_id] = {"amount_cents": amount_cents, "reason": reason, "status": status}
    ctx.count("approval_requests")
    return {"order_id": order_id, "amount_cents": amount_cents, "status": status}


def ticket__get(ctx, ticket_id):
    ticket = ctx.world.get("tickets", {}).get(ticket_id)
    if ticket is None:
        raise ValueError(f"no ticket {ticket_id}")
    return {"ticket_id": ticket_id, **ticket}


def ticket__reply(ctx, ticket_id, message, escalate=False):
    ticket = ctx.world["tickets"][ticket_id]
    ticket.setdefault("replies", []).append(message)
    ticket["status"] = "escalated" if escalate else "answered"
    return {"ticket_id": ticket_id, "status": ticket["status"]}


def deployment__get(ctx, name):
    deployment = ctx.world.get("deployments", {}).get(name)
    if deployment is None:
        raise ValueError(f"no deployment {name}")
    return {"name": name, "replicas": deployment["replicas"], "max_replicas": ctx.policy.get("max_replicas")}


def deployment__scale(ctx, name, replicas):
    bound = ctx.policy.get("max_replicas")
    if bound is not None and replicas > bound:
        ctx.deny(f"{replicas} replicas is more than the policy's max_replicas of {bound}")
    if replicas < 1:
        raise ValueError("a deployment needs at least 1 replica")
    ctx.world["deployments"][name]["replicas"] = replicas
    return {"name": name, "replicas": replicas}
