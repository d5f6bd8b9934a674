"""The 2019 study beside this run: its published averages, its CSV layout, and era ratios.

The October 2019 Hugging Face benchmark published, per framework and device, the average
inference time over every model and every batch x length point that ran (N/A excluded). The same
aggregate is computed here from this run, per era and mode, next to the published figure, each
labelled with the hardware it was measured on.
"""
import os

import pandas as pd

from duel.host.tables import scopes, summary

HARDWARE_2019 = {
    "cpu": "32-vCPU Intel Xeon @ 2.3 GHz (TensorFlow built with AVX2)",
    "cuda": "one NVIDIA V100 16 GB",
}
# Published all-model averages, seconds per call (PyTorch eager, TensorFlow in tf.function).
PUBLISHED_2019 = [
    ("cpu", "pytorch", "eager", 0.748),
    ("cpu", "tensorflow", "function", 0.823),
    ("cuda", "pytorch", "eager", 0.046),
    ("cuda", "tensorflow", "function", 0.043),
]
POINTS_2019 = 4 * 6  # batch 1, 2, 4, 8 x lengths 8 ... 1024, per model

SOURCE_2019 = "Hugging Face benchmark, October 2019 (torch 1.3, TensorFlow 2.0), published"
GROUP = scopes.TABLE_KEYS


def run_aggregates(frame):
    """Per era x device x framework x mode x precision x task x method: the 2019 aggregate.

    ``mean_s`` is the 2019 aggregation (mean of every ok point's reported time over all models);
    ``median_s`` the robust counterpart; ``ok_points`` of ``points`` show the coverage.
    """
    frame = summary.with_reported(frame)
    rows = []
    for values, group in frame.groupby(GROUP, sort=False):
        ok = group[group["status"] == "ok"]
        seconds = ok["reported_ms"].astype(float) / 1000.0
        record = dict(zip(GROUP, values))
        record.update(
            source="this run (%s %s)" % (record["framework"], group["framework_version"].iloc[0]),
            hardware=summary.hardware(group),
            mean_s=float(seconds.mean()) if len(seconds) else None,
            median_s=float(seconds.median()) if len(seconds) else None,
            ok_points=int(len(ok)),
            points=int(len(group)),
            models=int(group["model"].nunique()),
        )
        rows.append(record)
    return pd.DataFrame(rows)


def historical_table(frame):
    """The published 2019 averages followed by this run's, one row each, clearly labelled."""
    published = pd.DataFrame([
        dict(era="hf2019", device=device, framework=framework, mode=mode, precision="fp32",
             task="inference",
             method="timeit", source=SOURCE_2019, hardware=HARDWARE_2019[device], mean_s=mean_s,
             median_s=None, ok_points=None, points=10 * POINTS_2019, models=10)
        for device, framework, mode, mean_s in PUBLISHED_2019
    ])
    return pd.concat([published, run_aggregates(frame)], ignore_index=True)


def csv_2019_name(era, device, framework, mode, precision, task, method):
    """E.g. 'hf2019_cpu_pytorch_eager_inference_timeit.csv' (the precision named unless fp32)."""
    mode = mode if precision == "fp32" else "%s_%s" % (mode, precision)
    return "%s_%s_%s_%s_%s_%s.csv" % (era, device, framework, mode, task, method)


README_2019 = """These CSV files keep the 2019 script's own layout (model,1x8,...; seconds per call;
N/A where a point did not run), so nothing may stand above their header row; this file says
how their numbers were made.

File names: <era>_<device>_<framework>_<mode>[_<precision>]_<task>_<method>.csv
Method timeit (also read under its other name, hf2019): the 2019 aggregation, the mean per call of every timeit.repeat sample, pooled
over every replicate's samples (the replicates' 2019 means weighted by their sample counts).
Method duel: the median of the replicates' medians.
Processes per point in this run: %s.
"""


def _write_readme(folder, frame):
    path = os.path.join(folder, "README.txt")
    with open(path, "w") as handle:
        handle.write(README_2019 % scopes.replicates_label(frame))
    return path


def write_2019_csvs(frame, folder):
    """One CSV per table (scopes.TABLE_KEYS) in the 2019 script's layout.

    Header ``model,1x8,...`` (batch x length), a row per model, seconds per call as the shard
    stores them divided by 1000, ``N/A`` where the point is not ok, as 2019 wrote it.
    """
    if not os.path.isdir(folder):
        os.makedirs(folder)
    frame = summary.with_reported(frame)
    _write_readme(folder, frame)
    written = []
    for values, group in frame.groupby(GROUP, sort=False):
        points = summary.point_order(group)
        table = [[row[0]] + ["N/A" if value is None else repr(value) for value in row[1:]]
                 for row in summary.model_rows(group, points, "reported_ms", scale=1000.0)]
        path = os.path.join(folder, csv_2019_name(*values))
        with open(path, "w") as handle:
            handle.write(",".join(["model"] + points) + "\n")
            for line in table:
                handle.write(",".join(line) + "\n")
        written.append(path)
    return written
