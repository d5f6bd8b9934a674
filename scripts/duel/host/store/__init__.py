"""The results store: every run kept, read as one history.

``archive`` owns the files (a folder of Parquet files per run, added atomically, read through
DuckDB), ``ingest`` turns a results folder into runs to add, ``questions`` answers the history's
questions (runs, one point over runs, steps in it) and ``site`` publishes them as static pages
(its charts ``site_charts``, its verdicts ``judging``, its folder ``site_folder``).
"""
