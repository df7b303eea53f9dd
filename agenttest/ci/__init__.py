"""The GitHub Action (``action.yml`` at the repository's root): its script, run as ``python -m agenttest.ci.action
STEP``, and the few GitHub REST calls it makes — the base run's report from an artifact, the pull request's
one comment created or updated in place (docs/ci.md)."""
