"""Tools of the expense assistant: one function per tool in package.yao, called as fn(ctx, **arguments)."""

import zlib

POLICY_LIMIT = 5000


def create_expense(ctx, type, amount, description=""):
    """File an expense; refuses amounts outside the policy (the error goes back to the model)."""
    amount = float(amount)
    if amount <= 0:
        raise ValueError("amount must be positive")
    if amount > POLICY_LIMIT:
        raise ValueError(f"amount ${amount:,.0f} exceeds the policy limit of ${POLICY_LIMIT:,}")
    number = zlib.crc32(f"{ctx.user_id}:{type}:{amount}".encode()) % 1000
    return {
        "id": f"EXP-{number:03d}",
        "status": "submitted",
        "type": type,
        "amount": amount,
        "user": ctx.user_id,
    }
