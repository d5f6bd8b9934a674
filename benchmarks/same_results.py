"""Whether a change of code left a run's results as they were.

Two runs of the same grid at the old commit (A, B) say which columns are deterministic: those
equal in A and B at every point. A run at the new commit (C) must then have the same columns, the
same rows (point keys and status), and the same values in every deterministic column. Columns
that differ between A and B (times, sample counts, memory peaks, timestamps) are listed, not
compared. Exit status 0 when C matches, 1 when it does not.

    python benchmarks/same_results.py A/results/summary.parquet B/... C/... [--json FILE]
"""
import argparse
import json
import sys

import numpy as np
import pandas as pd

KEYS = ["era", "device", "framework", "mode", "precision", "task", "model", "replicate",
        "batch_size", "seq_len", "method"]
# Differ between two checkouts by design: the commit, and the settings' digest (it includes the
# model config's path, so a checkout in another folder gives another digest).
PER_CHECKOUT = ["git_commit", "config_sha256"]


def _equal(a, b):
    """Cell equality that treats two missing values, and equal lists (samples), as equal."""
    listed = [isinstance(value, (list, tuple, np.ndarray)) for value in (a, b)]
    if any(listed):
        return all(listed) and len(a) == len(b) and all(x == y for x, y in zip(a, b))
    if pd.isna(a) or pd.isna(b):
        return bool(pd.isna(a) and pd.isna(b))
    return bool(a == b)


def differing_columns(left, right):
    """The columns whose value differs at one point or more (rows aligned on KEYS)."""
    merged = left.merge(right, on=KEYS, suffixes=("_l", "_r"))
    found = []
    for name in left.columns:
        if name in KEYS:
            continue
        pairs = zip(merged[name + "_l"], merged[name + "_r"])
        if not all(_equal(a, b) for a, b in pairs):
            found.append(name)
    return found


def check(a, b, c):
    report = {"rows": {"A": len(a), "B": len(b), "C": len(c)}}
    report["same_columns"] = list(a.columns) == list(c.columns)
    report["columns_only_old"] = sorted(set(a.columns) - set(c.columns))
    report["columns_only_new"] = sorted(set(c.columns) - set(a.columns))
    rows = lambda frame: sorted(map(tuple, frame[KEYS + ["status"]].astype(str).values))
    report["same_rows_and_status"] = rows(a) == rows(c) and rows(a) == rows(b)
    varying = differing_columns(a, b)
    report["vary_between_A_and_B"] = varying
    shared = [name for name in a.columns if name in c.columns]
    differ = differing_columns(a[shared], c[shared])
    report["differ_A_C_beyond_A_B"] = [name for name in differ
                                       if name not in varying and name not in PER_CHECKOUT]
    report["per_checkout_columns"] = [name for name in differ if name in PER_CHECKOUT]
    report["matches"] = (report["same_columns"] and report["same_rows_and_status"]
                         and not report["differ_A_C_beyond_A_B"])
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("c")
    parser.add_argument("--json", help="write the report here too")
    args = parser.parse_args(argv)
    report = check(*(pd.read_parquet(path) for path in (args.a, args.b, args.c)))
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as handle:
            handle.write(text + "\n")
    return 0 if report["matches"] else 1


if __name__ == "__main__":
    sys.exit(main())
