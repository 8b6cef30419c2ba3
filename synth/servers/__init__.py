"""Bundled stateful MCP servers: seeded databases (:mod:`.db`), pure tool logic (:mod:`.catalog`) and the
thin stdio wrapper (:mod:`.run`)."""
