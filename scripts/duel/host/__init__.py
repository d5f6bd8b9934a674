"""Host code: runs in the workflow's own environment, never inside a cell.

Packages in import order, each importing only those before it: stacks, plan, tables, verdicts,
render, compare, provenance, store, workflow, bisect, cli (tests/test_code_rules.py holds the order).
"""
