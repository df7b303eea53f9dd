"""Accounting: budgets (limits per case run, what a run spent against them) and costs (prices, tokens and
money by role and connector) — the arithmetic that loading, resolution, the runner, the judge and the
reports all use."""
