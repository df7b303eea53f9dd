"""Tools of the expense assistant: one function per tool in package.yao, called as fn(ctx, **arguments).

The expenses live in the case's tool world, ctx.world (a fresh copy of the case's "world" for every
run; see docs/world.md): create_expense appends to ctx.world["expenses"], and a world may set its own
"policy_limit"."""

import zlib

POLICY_LIMIT = 5000


def create_expense(ctx, type, amount, description=""):
    """File an expense; refuses amounts outside the policy (the error goes back to the model)."""
    amount = float(amount)
    limit = ctx.world.get("policy_limit", POLICY_LIMIT)
    if amount <= 0:
        raise ValueError("amount must be positive")
    if amount > limit:
        raise ValueError(f"amount ${amount:,.0f} exceeds the policy limit of ${limit:,}")
    number = zlib.crc32(f"{ctx.user_id}:{type}:{amount}".encode()) % 1000
    expense = {
        "id": f"EXP-{number:03d}",
        "status": "submitted",
        "type": type,
        "amount": amount,
        "user": ctx.user_id,
    }
    if description:
        expense["description"] = description
    ctx.world.setdefault("expenses", []).append(expense)
    return dict(expense)
