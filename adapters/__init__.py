"""Adapters: each sub-package owns exactly one outside library and converts at the edge."""
