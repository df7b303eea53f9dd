"""Custom evaluators of the example suites (docs/formats-a.md): each receives the observation, the recorded
history of the conversation and its params, and returns a verdict."""


def selected_product(subject):
    """The product.selected fact names the option the customer's selection chose in the previous turn's choice."""
    turns = [*subject["history"], *([subject["turn"]] if subject.get("turn") else [])]  # a step's check: its own turn too
    facts = subject["observation"]["checkpoint"]["facts"]
    selected = [f for f in facts if f.get("type") == "product.selected"]
    chosen = next((t["selection"] for t in reversed(turns) if t.get("selection")), None)
    if not selected or chosen is None:
        return {"pass": False, "message": "no selection was made, or no product.selected fact was published"}
    if selected[-1]["productId"] != chosen["id"]:
        return {"pass": False, "message": f"selected {selected[-1]['productId']}, but the customer chose {chosen['id']}"}
    return {"pass": True, "message": f"selected {chosen['id']} ({chosen['label']})"}



def every_case_ran(subject):
    """A suite check: every selected case ran to a verdict (none was cut short or left unrun)."""
    unrun = [c["id"] for c in subject["cases"] if c["status"] in ("not run", "error", "timeout")]
    return {"pass": not unrun, "message": f"did not run to a verdict: {', '.join(unrun)}" if unrun else f"{len(subject['cases'])} cases"}
