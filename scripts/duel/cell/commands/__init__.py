"""The in-cell commands the workflow's jobs start, each with an era's own interpreter:
``python -m duel.cell.commands.<name>``, with the checkout's ``scripts`` folder on PYTHONPATH."""
