"""An agent's turn: the tool loop, MCP sessions, the worker-agent protocols; agents loaded and called."""
