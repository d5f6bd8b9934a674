"""The summary spreadsheet: every number of the run, laid out as the 2019 study did, and more.

Sheets:
- ``about``: what each sheet holds, its unit, and how the values were computed.
- ``long``: every contract column of every point of every replicate (milliseconds; samples
  as JSON text).
- one sheet per era x device x framework x mode x precision x task x method in the 2019
  layout: a row per model, a column per point ``BxL`` (batch x length), seconds per call
  pooled over the replicates (replicates.py), N/A where not ok.
- ``ratio PT-TF``: PyTorch time / TensorFlow time for each pair of modes (> 1: PyTorch slower).
- ``generation``: task generation's verdict per pair of modes (verdicts/generation.py), where
  the run generated.
- ``statistics``: that ratio per point with its 95% interval (Welch's t over the replicates'
  figures, or a bootstrap within one process), whether the difference is clear and the decision
  (faster, equivalent or undecided), and per pair of modes the count of each.
- ``noise``: each point's spread between its replicates (separate processes).
- ``mode speed-up``: eager time / mode time per framework (> 1: the mode is faster).
- ``GFLOP per s``: achieved GFLOP/s per point (analytic forward FLOPs / reported time), with the
  hardware's nominal peak and the share of it (peaks.py).
- ``cross-era``: each later era's time / the oldest's for the same cell and point (< 1:
  the later stack faster).
- ``timeline``: every era by its date: figures, PyTorch / TensorFlow per era, what got faster
  from the oldest era to the newest, generation's ratios per era, and the published claims
  beside this run.
- ``deployment``: what Python costs (Python time / C/C++ time of the same graph), PyTorch
  deployed vs TensorFlow deployed, and each deployment mode's load time, artifact size, export
  time and peak RSS.
- ``historical 2019``: the published 2019 all-model averages beside the same aggregate of
  this run, each with the hardware it was measured on.
- ``environment``: one row per cell and replicate: versions, CPU, threads, runner, commit,
  config hash.
- ``time``: where the jobs' time went (tables/breakdown.py), and how many points were
  disturbed and run again.
Values are written as the floats stored in the shards (seconds are ms / 1000, nothing rounded).
"""
import contextlib

import openpyxl.cell._writer
from openpyxl import Workbook
from openpyxl.styles import Font
import pandas as pd

from duel.cell import contract, frameworks
from duel.cell.adapters.deployed import MODES as DEPLOYED_MODES

from duel.host.tables import breakdown, published_2019, scopes, summary
from duel.host.verdicts import generation, pairs, statistics, timeline

FRAMEWORK_SHORT = {name: entry.short.upper() for name, entry in frameworks.FRAMEWORKS.items()}
MODE_SHORT = {"function": "func", "torchscript": "jit"}
TASK_SHORT = {"training": "train"}
NOT_AVAILABLE = "N/A"
BOLD = Font(bold=True)
SHEET_NAME_LIMIT = 31
SECONDS_FORMAT = "0.00000"
RATIO_FORMAT = "0.000"
GFLOPS_FORMAT = "0.00"
MEMORY_FORMAT = "0.0"
# A table per memory column the contract shows in a sheet's table, under the words it declares.
MEMORY_TABLES = [(name, contract.described(name)) for name in contract.shown_in(contract.TABLE)
                 if contract.BY_NAME[name].unit == "MiB"]


def _cell_value(value):
    """Spreadsheet-safe value: None and pandas' missing markers become empty cells."""
    try:
        if value is None or value != value:  # NaN, pd.NA raise or compare unequal
            return None
    except TypeError:
        return None
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def _append(sheet, values, bold=False, number_format=None):
    sheet.append([_cell_value(value) for value in values])
    for cell in sheet[sheet.max_row]:
        if bold:
            cell.font = BOLD
        if number_format and isinstance(cell.value, float):
            cell.number_format = number_format  # display only: the stored value stays exact


def _widen_first_column(sheet, width=28):
    sheet.column_dimensions["A"].width = width


def layout_sheet_name(era, device, framework, mode, precision, task, method, taken):
    """A short unique sheet name, e.g. 'current cpu TF func duel' (31 characters at most)."""
    parts = [era, device, FRAMEWORK_SHORT.get(framework, framework), MODE_SHORT.get(mode, mode)]
    if precision != "fp32":
        parts.append(precision)
    if task != "inference":
        parts.append(TASK_SHORT.get(task, task))
    parts.append(method)
    name = " ".join(parts)
    if len(name) > SHEET_NAME_LIMIT or name in taken:
        name = "%s #%d" % (name[: SHEET_NAME_LIMIT - 4], len(taken) + 1)
    taken.add(name)
    return name


def table_title(values, group):
    """E.g. 'tensorflow 2.21.0 (function, fp32), era current, inference, cpu, method duel'."""
    keys = dict(zip(scopes.TABLE_KEYS, values))
    return "%s %s (%s, %s), era %s, %s, %s, method %s" % (
        keys["framework"], group["framework_version"].iloc[0], keys["mode"], keys["precision"],
        keys["era"], keys["task"], keys["device"], keys["method"])


def _write_table(sheet, group, points, column, number_format, scale=1.0):
    """A header row of points, then a row per model; N/A where a point has no value."""
    _append(sheet, ["model"] + points, bold=True)
    for row in summary.model_rows(group, points, column, scale):
        _append(sheet, [row[0]] + [NOT_AVAILABLE if value is None else value
                                   for value in row[1:]], number_format=number_format)
    _widen_first_column(sheet)


def _unit_note(method, task, group):
    unit = "seconds per training step" if task == "training" else "seconds per call"
    if contract.reported_statistic(method) == "mean":
        unit += (": mean of every timeit.repeat(repeat, number) sample of every replicate, as "
                 "2019 aggregated")
    else:
        unit += ": median of the replicates' duel medians"
    return "%s (%s)" % (unit, scopes.replicates_label(group))


def write_long(workbook, frame):
    sheet = workbook.create_sheet("long")
    columns = [column for column in frame.columns if column not in ("reported_ms", "point")]
    _append(sheet, columns, bold=True)
    for row in summary.samples_as_text(frame)[columns].itertuples(index=False):
        _append(sheet, row)
    sheet.freeze_panes = "A2"


def write_layouts(workbook, frame, points, taken):
    """One 2019-layout sheet per table (era x device x framework x mode x precision x task x
    method)."""
    for values, group in frame.groupby(scopes.TABLE_KEYS, sort=False):
        sheet = workbook.create_sheet(layout_sheet_name(*values, taken=taken))
        _append(sheet, [table_title(values, group)], bold=True)
        _append(sheet, ["%s; %s" % (_unit_note(values[-1], values[-2], group), summary.hardware(group))])
        _write_table(sheet, group, points, "reported_ms", SECONDS_FORMAT, scale=1000.0)
        for column, label in MEMORY_TABLES:
            if group[column].notna().any():
                _append(sheet, [])
                _append(sheet, [label], bold=True)
                _write_table(sheet, group, points, column, MEMORY_FORMAT)


def write_comparison(workbook, name, intro, ratios, blocks, title, points, empty):
    """A sheet of ratio tables (pairs.py), one per block of ``ratios``; ``title`` names a
    block from its keys and rows; ``empty`` says why a sheet has none."""
    sheet = workbook.create_sheet(name)
    _append(sheet, [intro], bold=True)
    if ratios.empty:
        _append(sheet, [empty])
    for values, group in ratios.groupby(blocks, sort=False):
        _append(sheet, [])
        _append(sheet, [title(dict(zip(blocks, values)), group)], bold=True)
        _write_table(sheet, group, points, "ratio", RATIO_FORMAT)


def write_ratios(workbook, frame, points):
    write_comparison(
        workbook, "ratio PT-TF",
        "PyTorch time / TensorFlow time per point, same era, device, precision, task, method "
        "and input (> 1: PyTorch slower); N/A where either point is not ok",
        pairs.framework_ratios(frame),
        pairs.SHOWN.keys,
        lambda keys, group: "%(era)s %(device)s %(precision)s %(task)s, method %(method)s: "
                            "PyTorch %(mode_pt)s / TensorFlow %(mode_tf)s" % keys,
        points, "(this run has no cell of both frameworks)")


def _write_frame(sheet, table, empty):
    """A DataFrame as a header row and rows, or ``empty`` in its place."""
    if table.empty:
        _append(sheet, [empty])
        return
    _append(sheet, list(table.columns), bold=True)
    for row in table.itertuples(index=False):
        _append(sheet, [None if not isinstance(value, str) and pd.isna(value) else value
                        for value in row], number_format=RATIO_FORMAT)


def write_timeline(workbook, frame, min_effect, ratios, generated):
    """The eras against their dates (verdicts/timeline.py): figures, framework ratios, what got
    faster from the oldest era to the newest, generation's ratios per era, and the published
    claims beside this run (``ratios``: statistics.point_ratios of ``frame``; ``generated``:
    generation.generation_verdict of its long table)."""
    sheet = workbook.create_sheet("timeline")
    _append(sheet, ["The same points in every era of this run, oldest first (dates: "
                    "envs/eras.yaml). Intervals: 95%, Student's or Welch's t over the processes. "
                    + statistics.CLEAR_MEANING], bold=True)
    several = frame["era"].nunique() > 1
    parts = [
        ("Each era's figure per point (ms)", timeline.medians(frame)),
        ("PyTorch / TensorFlow per point and era (< 1: PyTorch faster)",
         timeline.framework_ratios(frame, min_effect, ratios)),
        ("What got faster: newest era's time / oldest era's (< 1: faster today)",
         timeline.speedups(frame, min_effect) if several else pd.DataFrame()),
        ("Generation: PyTorch / TensorFlow time to first token and time per output token "
         "per era (geometric means over the points; < 1: PyTorch faster)",
         timeline.generation_ratios(generated, frame)),
        ("Published claims, and this machine in the same era (the hardware differs: compare "
         "directions, not seconds)", timeline.claims(frame, min_effect, ratios)),
    ]
    for title, table in parts:
        _append(sheet, [])
        _append(sheet, [title], bold=True)
        _write_frame(sheet, table, "(this run has one era: nothing to compare across eras)"
                     if not several else "(none in this run)")
    _widen_first_column(sheet, 10)


def write_statistics(workbook, frame, min_effect, ratios):
    sheet = workbook.create_sheet("statistics")
    _append(sheet, [statistics.method_text(min_effect)], bold=True)
    if ratios.empty:
        _append(sheet, ["(this run has no point that both frameworks ran)"])
        return
    for table in (statistics.pair_summary(ratios, frame), ratios):
        _append(sheet, [])
        _append(sheet, list(table.columns), bold=True)
        for row in table.itertuples(index=False):
            _append(sheet, row, number_format=RATIO_FORMAT)
    _widen_first_column(sheet, 10)


def write_generation(workbook, table):
    """Task generation's verdict per pair of modes (``table``: generation.generation_verdict);
    no sheet where the run generated nothing."""
    if table.empty:
        return
    sheet = workbook.create_sheet("generation")
    for line in generation.lines(table):
        _append(sheet, [line.strip()], bold=not line.startswith(" "))
    _append(sheet, [])
    _append(sheet, list(table.columns), bold=True)
    for row in table.itertuples(index=False):
        _append(sheet, row, number_format=RATIO_FORMAT)
    _widen_first_column(sheet, 10)


def write_noise(workbook, frame):
    """Each point's spread between its processes; noisy points (> 10%) marked."""
    sheet = workbook.create_sheet("noise")
    _append(sheet, ["Spread between processes per point: replicate_figures holds each "
                    "replicate's figure (ms; duel: median, timeit: mean), replicate_spread the "
                    "slowest / the fastest, replicate_cv their coefficient of variation; noisy: "
                    "spread above %d%%. %s." % (round(100 * (statistics.NOISY_SPREAD - 1)),
                                                scopes.replicates_label(frame))], bold=True)
    table = statistics.noise_table(frame)
    if table.empty or table["replicates"].max() < 2:
        _append(sheet, ["(one replicate per cell: no spread between processes to show)"])
        return
    _append(sheet, list(table.columns), bold=True)
    for row in table.itertuples(index=False):
        _append(sheet, row, number_format=RATIO_FORMAT)
    _widen_first_column(sheet, 10)


def write_time(workbook, frame, references_s):
    """Where the jobs' time went (breakdown.parts), then the attempts (attempts.py)."""
    sheet = workbook.create_sheet("time")
    table = breakdown.parts(frame, references_s)
    _append(sheet, ["Where the jobs' time went (seconds; share of their sum). Reported figures: "
                    "%.0f%% (timed samples and first calls)." % (100 * breakdown.reported_share(table))],
            bold=True)
    _append(sheet, ["part", "seconds", "share"], bold=True)
    for row in table.itertuples(index=False):
        _append(sheet, row, number_format=RATIO_FORMAT)
    _append(sheet, [])
    for line in breakdown.attempt_lines(frame):
        _append(sheet, [line])
    _widen_first_column(sheet, 48)


def write_gflops(workbook, frame, points):
    sheet = workbook.create_sheet("GFLOP per s")
    _append(sheet, ["Achieved GFLOP/s per point: analytic forward FLOPs (matrix products, "
                    "scripts/duel/cell/flops.py) / the reported time per call"], bold=True)
    for values, group in frame.groupby(scopes.TABLE_KEYS, sort=False):
        _append(sheet, [])
        _append(sheet, ["%s; %s" % (table_title(values, group), summary.hardware(group))],
                bold=True)
        peak, source = group["peak_gflops"].iloc[0], group["peak_source"].iloc[0]
        _append(sheet, ["nominal peak: %s GFLOP/s (%s)"
                        % ("unknown" if pd.isna(peak) else "%.1f" % peak, source)])
        _write_table(sheet, group, points, "achieved_gflops", GFLOPS_FORMAT)
        if not pd.isna(peak):
            _append(sheet, ["% of nominal peak"], bold=True)
            _write_table(sheet, group, points, "percent_of_peak", GFLOPS_FORMAT)


def write_mode_speedups(workbook, frame, points):
    write_comparison(
        workbook, "mode speed-up",
        "Speed-up of each mode over eager: eager time / mode time per point, same framework, "
        "era, device, precision, task, method and input (> 1: the mode is faster); N/A where "
        "either point is not ok",
        pairs.mode_speedups(frame),
        [key for key in scopes.TABLE_KEYS if key != "mode"] + ["mode"],
        lambda keys, group: "%(framework)s %(mode)s over eager, %(precision)s, era %(era)s, "
                            "%(task)s, %(device)s, method %(method)s" % keys,
        points, "(this run has no mode besides eager next to an eager cell)")


def write_cross_era(workbook, frame, points):
    write_comparison(
        workbook, "cross-era",
        "Each later era's time / the oldest era's time, same device, framework, mode, "
        "precision, task, method, model and point (< 1: the later stack faster); N/A where "
        "either point is not ok",
        pairs.cross_era(frame),
        ["era_new", "era_old", "device", "framework", "mode", "precision", "task", "method"],
        lambda keys, group: "era %s / era %s: %s %s %s %s %s, method %s: %s %s / %s" % (
            keys["era_new"], keys["era_old"], keys["framework"], keys["mode"],
            keys["precision"], keys["task"], keys["device"], keys["method"], keys["framework"],
            group["framework_version_new"].iloc[0], group["framework_version_old"].iloc[0]),
        points, "(this run has no cell in both eras)")


DEPLOYMENT_TABLES = [("load_ms", "cold start, ms: C/C++ from the runner's process start to its first "
                                 "output; Python from the artifact's load call to the first output",
                      1.0, RATIO_FORMAT),
                     ("artifact_load_ms", "the load call alone, ms", 1.0, RATIO_FORMAT),
                     ("artifact_bytes", "artifact size on disk, MiB", 2.0 ** 20, MEMORY_FORMAT),
                     ("export_s", "export of the artifact, s", 1.0, RATIO_FORMAT),
                     ("peak_host_rss_mb", "peak RSS, MiB (C/C++: the runner process's own)",
                      1.0, MEMORY_FORMAT)]


def write_deployment(workbook, frame, points):
    """The deployment view: what Python costs (the same graph in Python and in C/C++), PyTorch
    deployed vs TensorFlow deployed, and what each deployment mode pays besides the calls."""
    sheet = workbook.create_sheet("deployment")
    _append(sheet, ["Deployment modes: one exported artifact run in Python and by the "
                    "framework's own C/C++ runtime (no Python in the timed process)"], bold=True)
    costs = pairs.python_costs(frame)
    deployed = pairs.deployed_ratios(frame)
    if costs.empty and deployed.empty:
        _append(sheet, ["(this run has no deployment mode beside its Python counterpart)"])
    scope = scopes.SCOPE
    for values, group in costs.groupby(scope + ["framework", "python_mode", "cpp_mode"],
                                       sort=False):
        keys = dict(zip(scope + ["framework", "python_mode", "cpp_mode"], values))
        _append(sheet, [])
        _append(sheet, ["What Python costs: %(framework)s %(python_mode)s time / %(cpp_mode)s "
                        "time (> 1: the C/C++ runner faster), %(era)s %(device)s %(precision)s "
                        "%(task)s, method %(method)s" % keys], bold=True)
        _write_table(sheet, group, points, "ratio", RATIO_FORMAT)
    for values, group in deployed.groupby(pairs.SHOWN.keys, sort=False):
        keys = dict(zip(pairs.SHOWN.keys, values))
        _append(sheet, [])
        _append(sheet, ["Deployed, side by side: PyTorch %(mode_pt)s / TensorFlow "
                        "%(mode_tf)s (> 1: PyTorch slower), %(era)s %(device)s "
                        "%(precision)s %(task)s, method %(method)s; intervals in "
                        "'statistics'" % keys], bold=True)
        _write_table(sheet, group, points, "ratio", RATIO_FORMAT)
    rows = frame[frame["mode"].isin(list(DEPLOYED_MODES))]
    for values, group in rows.groupby(scopes.TABLE_KEYS, sort=False):
        _append(sheet, [])
        _append(sheet, ["%s, runtime %s" % (table_title(values, group), ", ".join(
            sorted(set(group["runtime"].dropna()))) or "none")], bold=True)
        for column, label, scale, number_format in DEPLOYMENT_TABLES:
            _append(sheet, [label])
            _write_table(sheet, group, points, column, number_format, scale)
    _widen_first_column(sheet)


def write_historical(workbook, frame):
    sheet = workbook.create_sheet("historical 2019")
    _append(sheet, ["Average seconds per call over every model and batch x length point that "
                    "ran (the 2019 aggregation; N/A excluded). Published figures were measured "
                    "on other hardware: compare methods and ratios, not absolute times."],
            bold=True)
    table = published_2019.historical_table(frame)
    columns = ["source", "hardware"] + scopes.TABLE_KEYS + ["mean_s", "median_s", "ok_points", "points", "models"]
    _append(sheet, columns, bold=True)
    for row in table[columns].itertuples(index=False):
        _append(sheet, row, number_format=SECONDS_FORMAT)
    _widen_first_column(sheet, 60)


def write_environment(workbook, frame):
    sheet = workbook.create_sheet("environment")
    columns = summary.CELL_KEYS + summary.ENVIRONMENT
    cells = frame[columns].drop_duplicates(subset=summary.CELL_KEYS)
    _append(sheet, columns, bold=True)
    for row in cells.itertuples(index=False):
        _append(sheet, row)
    write_stacks(sheet, frame)


def write_stacks(sheet, frame):
    """Below the cells: one row per software stack of the run (cells with the same installed
    set ran on the same software; lock_match: that set is exactly its lock file's)."""
    _append(sheet, [])
    _append(sheet, ["software stacks: same installed_sha256, same software"], bold=True)
    table = summary.stacks(frame)
    _append(sheet, list(table.columns), bold=True)
    for row in table.itertuples(index=False):
        _append(sheet, row)


def write_columns(workbook):
    """What each column of the long sheet is, as the contract declares it."""
    sheet = workbook.create_sheet("columns")
    _append(sheet, ["group", "column", "unit", "a point's processes pooled", "shows in",
                    "meaning"], bold=True)
    for row in contract.doc_rows():
        _append(sheet, row)
    sheet.freeze_panes = "A2"


def write_about(sheet, sheet_names):
    """The first sheet: what each sheet holds, and the list of sheets."""
    lines = [
        ["Duel summary: PyTorch vs TensorFlow transformer benchmarks"],
        ["long", "every point of every replicate, every contract column; times in "
                 "milliseconds per call"],
        ["layout sheets", "2019 layout: a row per model, a column per batch x length; seconds "
                          "per call pooled over the replicates (duel: median of their medians; "
                          "timeit: mean of every sample, as 2019); N/A: not ok"],
        ["ratio PT-TF", "PyTorch / TensorFlow time per point (> 1: PyTorch slower)"],
        ["statistics", "that ratio with its interval over the replicates, whether the "
                       "difference is clear, and the decision. " + statistics.CLEAR_MEANING
                       + " " + statistics.DECISIONS_MEANING],
        ["noise", "each point's spread between its replicates (separate processes)"],
        ["generation", "task generation per pair of modes: PyTorch / TensorFlow time to first "
                       "token and time per output token (geometric means over the points, "
                       "95% intervals over processes, decisions), tokens per second of each, "
                       "and the points whose tokens agree with PyTorch eager's"],
        ["mode speed-up", "eager time / mode time per point (> 1: the mode is faster)"],
        ["GFLOP per s", "achieved GFLOP/s per point (analytic FLOPs / reported time), and its "
                        "share of the hardware's nominal peak where known"],
        ["cross-era", "each later era / the oldest era's time per point (< 1: later faster)"],
        ["timeline", "every era's figures by date, PyTorch/TensorFlow per era, what got faster "
                     "since the oldest era, generation's PyTorch/TensorFlow time to first token "
                     "and per output token per era, and the published claims beside this run"],
        ["deployment", "Python time / C/C++ time of the same graph (> 1: C/C++ faster), "
                       "PyTorch / TensorFlow deployed, and load time, artifact size, export "
                       "time and peak RSS of each deployment mode"],
        ["historical 2019", "the 2019 published averages beside this run's, with hardware"],
        ["environment", "what produced each cell's numbers, per replicate"],
        ["time", "where the jobs' time went, and the points disturbed and run again"],
        ["columns", "every column of long: its unit, how a point's processes pool it, where it "
                    "shows besides long, and what it means"],
        [],
        ["sheets"] + list(sheet_names),
    ]
    for line in lines:
        _append(sheet, line)
    sheet["A1"].font = BOLD
    _widen_first_column(sheet, 16)


@contextlib.contextmanager
def exact_floats():
    """Write floats with Python's shortest round-trip repr while saving.

    openpyxl formats numbers as ``%.16g``, which drops the 17th significant digit that some
    doubles need: the spreadsheet would then hold a neighbouring float, not the shard's value.
    Spreadsheet programs read 17-digit values as the same IEEE double.
    """
    original = openpyxl.cell._writer.safe_string

    def safe_string(value):
        if isinstance(value, float) and value == value and abs(value) != float("inf"):
            return repr(value)
        return original(value)

    openpyxl.cell._writer.safe_string = safe_string
    try:
        yield
    finally:
        openpyxl.cell._writer.safe_string = original


def write_workbook(frame, path, min_effect=statistics.MIN_EFFECT, points_table=None,
                   references_s=0.0):
    """The whole spreadsheet for a merged frame (see the module docstring): every sheet reads
    the long table ``frame`` (every replicate) or its point table, derived once here unless the
    caller hands it in (``points_table``: summary.with_reported of ``frame``); ``references_s``:
    the reference jobs' wall time, for the time sheet."""
    long_frame = frame
    frame = summary.with_reported(frame) if points_table is None else points_table
    points = summary.point_order(frame)
    workbook = Workbook()
    about = workbook.active
    about.title = "about"
    write_long(workbook, long_frame)
    write_layouts(workbook, frame, points, taken=set())
    write_ratios(workbook, frame, points)
    ratios = statistics.point_ratios(frame, min_effect=min_effect)  # judged once, read twice
    write_statistics(workbook, frame, min_effect, ratios)
    write_noise(workbook, frame)
    generated = generation.generation_verdict(long_frame, min_effect)  # read twice too
    write_generation(workbook, generated)
    write_mode_speedups(workbook, frame, points)
    write_gflops(workbook, frame, points)
    write_cross_era(workbook, frame, points)
    write_timeline(workbook, frame, min_effect, ratios, generated)
    write_deployment(workbook, frame, points)
    write_historical(workbook, frame)
    write_environment(workbook, long_frame)
    write_time(workbook, long_frame, references_s)
    write_columns(workbook)
    write_about(about, workbook.sheetnames[1:])
    with exact_floats():
        workbook.save(path)
