"""Script assertions for the example app: func(output, input, value) -> bool or {"pass", "message"}."""

import re


def has_reference(output, input, value):
    prefix = (value or {}).get("prefix", "EXP-")
    match = re.search(re.escape(prefix) + r"\d+", str(output))
    if match:
        return {"pass": True, "message": f"reference {match.group(0)}"}
    return {"pass": False, "message": f"no {prefix}<number> reference in the reply"}


def amount_within(output, input, value):
    """Every $ amount in the reply lies within value['min_amount']..value['max_amount']."""
    amounts = [float(a.replace(",", "")) for a in re.findall(r"\$([\d,]+(?:\.\d+)?)", str(output))]
    low, high = value.get("min_amount", 0), value.get("max_amount", float("inf"))
    return bool(amounts) and all(low <= a <= high for a in amounts)
