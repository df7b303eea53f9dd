"""Script assertions: {"type": "script", "script": "scripts.checks.short_reply", "value": 120}
calls short_reply(output, input, value) and passes when it returns True (or {"pass": true})."""


def short_reply(output, input, value):
    limit = value or 200
    return {"pass": len(str(output)) <= limit, "message": f"{len(str(output))} characters, limit {limit}"}
