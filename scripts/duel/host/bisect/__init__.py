"""``duel bisect``: which release of a framework made a point faster or slower.

search.py holds the search over releases (pure: figures in, steps out); stack.py makes each
release's era (a hashed lock, the rest of the stack held); measure.py measures a release by a
workflow run into the results store; answer.py writes the answer (table, chart, JSON) and names
what else changed with each step.
"""
