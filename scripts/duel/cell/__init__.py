"""In-cell code: build one model, time every point of its grid, write one Parquet shard.

Everything under this package must run on the oldest era (Python 3.6, torch 1.3, TensorFlow 2.0,
transformers 2.1.1, numpy 1.17, pyarrow 0.15): no dataclasses, no walrus, no f-string ``=``,
no ``from __future__ import annotations``; imports limited to the standard library, numpy,
pyarrow, the framework under test and transformers. ``tests/test_code_rules.py`` holds this.
"""
