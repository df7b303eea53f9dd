"""The mathematics behind every interval, p-value and judge figure (FORMATS §19, docs/statistics.md), in plain
Python: pure functions of counts, no I/O, no third-party library. ``intervals`` (Wilson, the seeded bootstrap
over cases), ``exact`` (binomial and hypergeometric tails: McNemar, the paired sign-flip test, Fisher, Holm),
``power`` (the minimum detectable difference, the runs a difference needs), ``agreement`` (a judge against
people's labels: Cohen's κ, TPR, TNR, precision)."""
