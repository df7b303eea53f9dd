"""Generator scripts for the example app: func(target_agent_info, params) -> list of cases."""


def expense_cases(target, params):
    """One 'asks to confirm' case per amount, as many as params['count'] asks for."""
    count = int(params.get("count", 3))
    cases = []
    for i in range(count):
        amount = 100 * (i + 1)
        cases.append({
            "id": f"confirm-{amount}",
            "name": f"asks to confirm ${amount}",
            "input": f"Taxi to the airport (travel), ${amount}",
            "assertions": [{"type": "contains", "value": f"${amount}"}, {"type": "regex", "value": "(?i)confirm"}],
        })
    return cases
