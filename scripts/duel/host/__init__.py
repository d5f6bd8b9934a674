"""Host code: runs in the workflow's own environment (planning, merge, spreadsheet)."""
