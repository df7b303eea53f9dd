"""Test hooks: Before/After around a case that names them ("before": "env_test.Before"), and
BeforeAll/AfterAll around the run (--before env_test.BeforeAll --after env_test.AfterAll)."""


def BeforeAll(ctx, cases):
    return {"data": {"cases": len(cases)}}


def Before(ctx, case):
    return {"data": {"case": case["id"], "user": ctx.user_id}}


def After(ctx, case, result, before_data):
    assert before_data["case"] == case["id"]


def AfterAll(ctx, results, before_data):
    passed = sum(1 for r in results if r["status"] == "passed")
    print(f"AfterAll: {passed}/{len(results)} passed")
