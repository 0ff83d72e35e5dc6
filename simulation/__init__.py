"""Pure-Python GPU cluster simulator: engine, policies, metrics and CLI (no Django)."""
