"""The user's app on disk: folders, package.yao and other Yao files, prompts, MCP files, hooks, ``init``."""
