"""Test hooks for the expense assistant (see docs/hooks.md).

Before/After run around a case that names them; BeforeAll/AfterAll around the run with
--before env_test.BeforeAll --after env_test.AfterAll. Here they keep a tiny in-memory ledger."""

LEDGER = {"prepared": 0, "cleaned": 0}


def BeforeAll(ctx, cases):
    LEDGER.update(prepared=0, cleaned=0)
    return {"data": {"initialized": True, "cases": len(cases)}}


def Before(ctx, case):
    LEDGER["prepared"] += 1
    return {"data": {"user": ctx.user_id, "case": case["id"]}}


def After(ctx, case, result, before_data):
    LEDGER["cleaned"] += 1
    assert before_data["case"] == case["id"]


def AfterAll(ctx, results, before_data):
    passed = sum(1 for r in results if r["status"] == "passed")
    print(f"[env_test] AfterAll: {passed}/{len(results)} passed; ledger {LEDGER}; BeforeAll data {before_data}")
