"""The airline's tools: they read and change the case's world (``ctx.world``), as tau-bench's tools change
its database; the cases' final ``state`` assertions judge that database as the conversation left it."""


def get_reservation_details(ctx, reservation_id):
    reservation = ctx.world["reservations"].get(reservation_id)
    if reservation is None:
        raise ValueError(f"reservation {reservation_id} not found")
    return {"reservation_id": reservation_id, **reservation}


def cancel_reservation(ctx, reservation_id):
    reservation = ctx.world["reservations"][reservation_id]
    reservation["status"] = "cancelled"
    return {"reservation_id": reservation_id, **reservation}


def transfer_to_human_agents(ctx, summary):
    return "Transfer successful"
