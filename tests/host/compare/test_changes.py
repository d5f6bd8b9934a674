"""Comparing two runs (`duel compare`, host/compare/changes.py): known answers on synthetic
runs, every bad input, the environment differences, and two real tiny workflow runs."""
import os
import subprocess

import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import (CELLS, DUEL, GRID, QUICK, REPO, TEST_MODELS, snakemake, synthetic_rows,
                      write_config)
from duel.cell import conditions, shard
from duel.host.compare import changes, report, two_runs
from duel.host.store import archive, questions

from duel.host.cli import main as duel

COMMAND = DUEL + ["compare"]


def write_run(folder, rows, extra=None, drop=()):
    """A run directory with ``rows`` as its results/summary.parquet (``extra``: columns the
    contract does not know, constant per run; ``drop``: columns as an older summary lacked)."""
    path = os.path.join(str(folder), "results", "summary.parquet")
    shard.write_shard(rows, path)
    table = pq.read_table(path)
    for name, value in (extra or {}).items():
        table = table.append_column(name, pa.array([value] * table.num_rows, type=pa.string()))
    table = table.drop_columns(list(drop))
    pq.write_table(table, path)
    return str(folder)


def run_cli(*arguments):
    result = subprocess.run(COMMAND + [str(a) for a in arguments], capture_output=True,
                            text=True, timeout=300)
    return result


def by_point(points, framework, batch, length):
    rows = points[(points["framework"] == framework) & (points["batch_size"] == batch)
                  & (points["seq_len"] == length)]
    assert len(rows) == 1
    return rows.iloc[0]


@pytest.mark.unit
def test_an_injected_20_percent_slowdown_is_found_with_exit_1(tmp_path):
    base = write_run(tmp_path / "base", synthetic_rows(seed=1))
    new = write_run(tmp_path / "new", synthetic_rows(seed=2, slow={("pytorch", 2, 128): 1.2}))
    output = tmp_path / "out"
    result = run_cli(base, new, "--output", output)
    assert result.returncode == 1, result.stderr
    assert "Exit 1: 1 point(s) clearly slower by more than 5%" in result.stdout
    points = pd.read_csv(output / "comparison.csv")
    slow = by_point(points, "pytorch", 2, 128)
    assert slow["verdict"] == "slower" and slow["beyond_threshold"]
    assert 1.1 < slow["ratio"] < 1.3 and 1.0 < slow["ci_low"] < slow["ratio"] < slow["ci_high"]
    assert slow["interval"] == "between processes"
    others = points.drop(slow.name)
    assert set(others["verdict"]) == {"undecided"}, others[["cell", "point", "ratio"]]
    assert len(points) == len(CELLS) * len(GRID)
    assert sorted(os.listdir(output)) == sorted(
        ["comparison.md", "comparison.csv", "environment.csv", "comparison.xlsx",
         "comparison.png", "comparison.svg"])
    text = (output / "comparison.md").read_text()
    assert "slower 1, undecided 9 (of 10 points)" in text
    assert "| pytorch eager bert | 2x128 | duel |" in text
    workbook = openpyxl.load_workbook(output / "comparison.xlsx")
    assert workbook.sheetnames == ["summary", "points", "environment"]
    summary_rows = [list(row) for row in workbook["summary"].iter_rows(values_only=True)]
    assert ["slower", 1] in [row[:2] for row in summary_rows]
    # A higher threshold lets the same slowdown pass CI, though its verdict stays "slower".
    assert run_cli(base, new, "--output", tmp_path / "t", "--threshold", "0.3").returncode == 0
    assert by_point(pd.read_csv(tmp_path / "t" / "comparison.csv"), "pytorch", 2, 128)[
        "verdict"] == "slower"


@pytest.mark.unit
def test_aa_with_noise_between_processes_is_not_flagged_but_one_process_each_would_be():
    """Same distribution on both sides, each process at its own level (4% between processes,
    1% within): with 3 replicates a side nothing is flagged; with one process a side the
    within-process interval is too narrow and calls process noise a change."""
    rows_a = synthetic_rows(seed=11, between=0.04, models=("a", "b", "c", "d"))
    rows_b = synthetic_rows(seed=12, between=0.04, models=("a", "b", "c", "d"))
    base, new = (changes.read_run_frame(pd.DataFrame(rows)) for rows in (rows_a, rows_b))
    result = changes.compare(base, new)
    assert len(result.points) == 40
    assert result.points["verdict"].isin(["equivalent", "undecided"]).mean() >= 0.95
    assert result.exit_status == 0
    assert set(result.points["interval"]) == {"between processes"}
    one_a = [row for row in rows_a if row["replicate"] == 1]
    one_b = [row for row in rows_b if row["replicate"] == 1]
    single = changes.compare(changes.read_run_frame(pd.DataFrame(one_a)),
                             changes.read_run_frame(pd.DataFrame(one_b)))
    assert set(single.points["interval"]) == {"within one process only"}
    assert (~single.points["verdict"].isin(["equivalent", "undecided"])).sum() >= 5


@pytest.mark.unit
def test_environment_differences_are_listed_exactly(tmp_path):
    base = write_run(tmp_path / "base", synthetic_rows(seed=1))
    changed = {"pytorch": dict(framework_version="2.14.0+cpu", threads=1),
               "tensorflow": dict(threads=1)}
    new = write_run(tmp_path / "new", synthetic_rows(seed=2, env=changed,
                                                     started="2026-12-01T07:00:00+00:00"),
                    extra={"a_future_column": "cafe"})
    result = changes.compare(changes.read_run(base), changes.read_run(new))
    assert result.environment.to_dict("records") == [
        dict(column="framework_version", base="2.13.0+cpu", new="2.14.0+cpu", cells=1,
             which="pytorch eager bert"),
        dict(column="threads", base="2", new="1", cells=2, which="all 2 matched cells"),
        dict(column="a_future_column", base="(not recorded)", new="cafe", cells=2,
             which="all 2 matched cells"),
    ]
    assert result.warnings == []  # same hardware, methods, eras; the base is older
    text = changes.compare(changes.read_run(new), changes.read_run(base)).warnings
    assert text == ["The baseline looks newer than the new run (base started "
                    "2026-12-01T07:00:00+00:00, new 2026-12-01T06:00:00+00:00): the first "
                    "argument is the baseline."]


@pytest.mark.unit
def test_other_hardware_is_said_loudly_in_the_first_line(tmp_path):
    base = write_run(tmp_path / "base", synthetic_rows(seed=1))
    other = {framework: dict(cpu_model="Intel Xeon", logical_cpus=32) for framework, _ in CELLS}
    new = write_run(tmp_path / "new", synthetic_rows(seed=2, env=other))
    output = tmp_path / "out"
    result = run_cli(base, new, "--output", output)
    assert result.returncode == 0, result.stderr
    first = "DIFFERENT HARDWARE: base ran on cpu: AMD EPYC 7B13 (2 logical CPUs); new on cpu: " \
            "Intel Xeon (32 logical CPUs)."
    assert result.stdout.splitlines()[0].startswith(first)
    assert (output / "comparison.md").read_text().splitlines()[0].startswith("**" + first)


def with_canary(rows, milliseconds, rule=conditions.RULE):
    """Rows timed with a canary, and judged by ``rule`` (which names the canary too)."""
    for row in rows:
        if row["status"] == "ok":
            row.update(canary_before_ms=milliseconds, canary_after_ms=milliseconds * 1.02,
                       disturbance_rule=rule)
    return rows


@pytest.mark.unit
def test_canaries_of_the_old_rule_are_not_the_machine_beside_todays():
    base = changes.read_run_frame(pd.DataFrame(with_canary(synthetic_rows(seed=1), 1.0, "canary-ratio")))
    new = changes.read_run_frame(pd.DataFrame(with_canary(synthetic_rows(seed=2), 2.0)))
    result = changes.compare(base, new)
    assert result.machine_shift == 1.0
    assert any("(the 192x192 canary) in base" in line for line in result.warnings)


@pytest.mark.unit
def test_a_machine_that_ran_at_another_speed_is_said_before_the_points(tmp_path):
    """The canary (the same numpy product in every run) took 16% less time in the new run, as
    the machine did between the two runs of the README's A/A pair: the comparison says so first,
    since a change of that size on every point may be the machine's."""
    base = changes.read_run_frame(pd.DataFrame(with_canary(synthetic_rows(seed=1), 0.186)))
    faster = changes.read_run_frame(pd.DataFrame(with_canary(synthetic_rows(seed=2), 0.156)))
    same = changes.read_run_frame(pd.DataFrame(with_canary(synthetic_rows(seed=3), 0.180)))
    assert changes.compare(base, faster).warnings == [
        "THE MACHINE CHANGED SPEED: the canary (a fixed numpy matrix product timed around every "
        "point, on the cell's own cores) took 0.188 ms in base and 0.158 ms in new (new / base "
        "0.84): the machine or the cores each cell had changed, not only the software. Only "
        "changes beyond 0.80-1.05 count, and beyond the canary's change around a point where "
        "that is larger (--no-machine-band: the minimum effect alone)."]
    assert changes.compare(base, same).warnings == []  # 3% apart: within the minimum effect
    unrecorded = changes.read_run_frame(pd.DataFrame(synthetic_rows(seed=4)))
    assert changes.compare(unrecorded, faster).warnings == []  # an older run: no canary


def uniformly_slower(seed, factor, canary_ms, slow=None):
    rows = synthetic_rows(seed=seed, slow=slow)
    for row in rows:
        if row["status"] == "ok":
            row["samples"] = [value * factor for value in row["samples"]]
            for name in ("mean", "median", "std", "min", "max", "p90"):
                row[name] *= factor
    return changes.read_run_frame(pd.DataFrame(with_canary(rows, canary_ms)))


@pytest.mark.unit
def test_a_change_within_the_machines_own_is_not_credited_to_the_software():
    """A/A on a machine that ran 25% slower in the new run, as the canary says (the README's
    third A/A pair: canary 1.30x, points 1.22x): no point is called slower and CI passes; a
    point 60% slower (beyond the machine's 25%) is still found; --no-machine-band calls all
    of them slower."""
    base = uniformly_slower(1, 1.0, 0.160)
    drifted = uniformly_slower(2, 1.25, 0.200)
    result = changes.compare(base, drifted)
    assert result.machine_shift == pytest.approx(1.25)
    assert set(result.points["verdict"]) == {"undecided"} and result.exit_status == 0
    assert set(result.points["note"]) == {
        "interval reaches into the machine's own change (canary x1.25)"}
    assert "Only changes beyond 0.95-1.31 count" in result.warnings[0]
    worse = uniformly_slower(3, 1.25, 0.200, slow={("pytorch", 2, 128): 1.6})
    found = changes.compare(base, worse)
    assert found.exit_status == 1
    assert found.points.loc[found.points["verdict"] == "slower", "point"].tolist() == ["2x128"]
    plain = changes.compare(base, drifted, machine_band=False)
    assert plain.machine_shift == 1.0 and plain.exit_status == 1
    assert (plain.points["verdict"] == "slower").all()
    assert plain.warnings[0].endswith("The verdicts do not allow for it (--no-machine-band).")


@pytest.mark.unit
def test_a_change_within_the_band_is_equivalent_and_one_across_its_edge_undecided():
    """Processes that differ by 0.5%: an A/A pair's intervals lie inside the 5% band
    (equivalent); 25% slower on a machine whose canary also ran 25% slower lies inside the band
    the machine's change widens (equivalent, for the machine's reason); 4% slower reaches across
    the band's edge (undecided)."""
    quiet = dict(between=0.005, within=0.005)
    base = changes.read_run_frame(pd.DataFrame(with_canary(synthetic_rows(seed=1, **quiet),
                                                           0.160)))
    same = changes.compare(base, changes.read_run_frame(pd.DataFrame(with_canary(
        synthetic_rows(seed=2, **quiet), 0.160))))
    assert set(same.points["verdict"]) == {"equivalent"} and same.exit_status == 0
    assert set(same.points["note"]) == {"within the minimum effect (5%)"}
    assert "equivalent 10 (of 10 points)" in report.markdown(same)
    rows = synthetic_rows(seed=3, slow={key: 1.25 for key in
                                        [(framework, batch, length) for framework, _ in CELLS
                                         for batch, length in GRID]}, **quiet)
    drifted = changes.compare(base, changes.read_run_frame(pd.DataFrame(with_canary(rows,
                                                                                    0.200))))
    assert drifted.machine_shift == pytest.approx(1.25)
    assert set(drifted.points["verdict"]) == {"equivalent"} and drifted.exit_status == 0
    assert set(drifted.points["note"]) == {"within the machine's own change (canary x1.25)"}
    edge = changes.compare(base, changes.read_run_frame(pd.DataFrame(with_canary(
        synthetic_rows(seed=4, slow={("pytorch", 2, 128): 1.045}, **quiet), 0.160))))
    point = by_point(edge.points, "pytorch", 2, 128)
    assert point["ci_low"] < 1.05 < point["ci_high"]
    assert (point["verdict"], point["note"]) == (
        "undecided", "interval reaches into the minimum effect (5%)")


def slowed_at(seed, point, factor, canary_factor):
    """A run on a machine at its usual speed (canary 0.160 ms) but for one point (framework,
    batch, length): timed ``factor`` times slower while its canary ran ``canary_factor`` slower."""
    rows = with_canary(synthetic_rows(seed=seed, slow={point: factor}), 0.160)
    for row in rows:
        if (row["framework"], row["batch_size"], row["seq_len"]) == point:
            row["canary_before_ms"] *= canary_factor
            row["canary_after_ms"] *= canary_factor
    return changes.read_run_frame(pd.DataFrame(rows))


@pytest.mark.unit
def test_a_point_timed_while_the_machine_was_slow_is_judged_against_its_own_canary():
    """The README's third A/A pair: the run's median canary moved 1.30x, but the canary around
    the two points it called slower (1.53x, 1.66x) moved 1.55x and 1.61x. A point whose own canary
    ran 1.5x slower is not called 1.45x slower (the run-wide canary did not move); 2x slower it
    still is; the same 1.45x on a point whose canary did not move is found."""
    base = slowed_at(1, ("pytorch", 2, 128), 1.0, 1.0)
    local = changes.compare(base, slowed_at(2, ("pytorch", 2, 128), 1.45, 1.5))
    assert local.machine_shift == 1.0 and local.warnings == [] and local.exit_status == 0
    point = by_point(local.points, "pytorch", 2, 128)
    assert point["canary_ratio"] == pytest.approx(1.5)
    assert (point["verdict"], point["note"]) == (
        "undecided", "interval reaches into the machine's own change (canary x1.50)")
    beyond = changes.compare(base, slowed_at(3, ("pytorch", 2, 128), 2.0, 1.5))
    assert beyond.exit_status == 1
    assert beyond.points.loc[beyond.points["verdict"] == "slower", "point"].tolist() == ["2x128"]
    elsewhere = changes.compare(base, slowed_at(4, ("pytorch", 1, 8), 1.45, 1.0))
    assert elsewhere.exit_status == 1
    assert elsewhere.points.loc[elsewhere.points["verdict"] == "slower", "point"].tolist() == [
        "1x8"]
    plain = changes.compare(base, slowed_at(2, ("pytorch", 2, 128), 1.45, 1.5),
                            machine_band=False)
    assert plain.exit_status == 1


@pytest.mark.unit
def test_a_canary_timed_with_another_numpy_does_not_widen_the_band():
    """Across eras (numpy 1.17 in the 2019 stack, 2.x today) the canary times the software as
    well as the machine: a 25% slowdown with a 25% slower canary is then called slower, and a
    line says why there is no band."""
    base = uniformly_slower(1, 1.0, 0.160)
    rows = with_canary(synthetic_rows(seed=2), 0.200)
    for row in rows:
        row["numpy_version"] = "1.17.4"
        if row["status"] == "ok":
            row["samples"] = [value * 1.25 for value in row["samples"]]
            for name in ("mean", "median", "std", "min", "max", "p90"):
                row[name] *= 1.25
    result = changes.compare(base, changes.read_run_frame(pd.DataFrame(rows)))
    assert result.machine_shift == 1.0 and result.exit_status == 1
    assert (result.points["verdict"] == "slower").all()
    assert result.points["canary_ratio"].isna().all()
    assert result.warnings == [
        "The canaries were timed with numpy 2.3.5 in base and 1.17.4 in new: their change is "
        "not the machine's alone, so no machine band."]


@pytest.mark.unit
def test_verdicts_for_failures_and_missing_points(tmp_path):
    base_rows = synthetic_rows(seed=1, status={("pytorch", 4, 32): "oom",
                                               ("tensorflow", 4, 32): "error"})
    new_rows = synthetic_rows(seed=2, status={("pytorch", 1, 8): "error",
                                              ("tensorflow", 4, 32): "error"},
                              grid=GRID[:1] + GRID[2:] + [(8, 8)])
    base = write_run(tmp_path / "base", base_rows)
    new = write_run(tmp_path / "new", new_rows)
    output = tmp_path / "out"
    assert run_cli(base, new, "--output", output).returncode == 0
    points = pd.read_csv(output / "comparison.csv")
    assert by_point(points, "pytorch", 1, 8)["verdict"] == "newly failing"
    assert by_point(points, "pytorch", 1, 8)["note"] == "new error: boom"
    assert by_point(points, "pytorch", 4, 32)["verdict"] == "newly ok"
    assert by_point(points, "tensorflow", 4, 32)["verdict"] == "not ok in either"
    assert by_point(points, "pytorch", 1, 128)["verdict"] == "only in base"
    assert by_point(points, "pytorch", 8, 8)["verdict"] == "only in new"
    assert list(points["point"][-2:]) == ["8x8", "8x8"]  # the new run's extra points last
    # CI can also fail on a newly failing point.
    assert run_cli(base, new, "--output", tmp_path / "o2",
                   "--fail-on-new-failures").returncode == 1


@pytest.mark.unit
def test_old_summaries_without_replicates_or_precision_are_compared(tmp_path):
    old = [row for row in synthetic_rows(seed=1) if row["replicate"] == 1]
    base = write_run(tmp_path / "base", old, drop=("replicate", "precision", "pyarrow_version"))
    new = write_run(tmp_path / "new", synthetic_rows(seed=2))
    result = changes.compare(changes.read_run(base), changes.read_run(new))
    assert (result.points["replicates_base"] == 1).all()
    assert (result.points["replicates_new"] == 3).all()
    assert set(result.points["interval"]) == {"within one process only"}
    assert "pyarrow_version" in list(result.environment["column"])


@pytest.mark.unit
def test_runs_of_two_eras_match_only_when_asked(tmp_path):
    env_2019 = {"pytorch": dict(framework_version="1.3.0", python="3.7.16"),
                "tensorflow": dict(framework_version="2.0.0", python="3.7.16")}
    base = write_run(tmp_path / "base", synthetic_rows(seed=1, era="hf2019", env=env_2019,
                                                       slow={("pytorch", 2, 128): 1.5}))
    new = write_run(tmp_path / "new", synthetic_rows(seed=2))
    refused = run_cli(base, new, "--output", tmp_path / "o1")
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1
    assert "no point in common" in refused.stderr and "--ignore era" in refused.stderr
    assert not (tmp_path / "o1").exists()
    output = tmp_path / "o2"
    result = run_cli(base, new, "--output", output, "--ignore", "era")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        "ACROSS ERAS: base hf2019, new current (matched on everything but the era).")
    points = pd.read_csv(output / "comparison.csv")
    assert set(points["era_base"]) == {"hf2019"} and set(points["era_new"]) == {"current"}
    assert set(points["cell"]) == {"pytorch eager bert", "tensorflow function bert"}
    assert by_point(points, "pytorch", 2, 128)["verdict"] == "faster"
    environment = pd.read_csv(output / "environment.csv")
    assert ("python", "3.7.16", "3.11.9") in set(
        zip(environment["column"], environment["base"], environment["new"]))
    # A side with both eras cannot be matched across them.
    both = write_run(tmp_path / "both",
                     synthetic_rows(seed=3) + synthetic_rows(seed=4, era="hf2019"))
    result = run_cli(both, new, "--output", tmp_path / "o3", "--ignore", "era")
    assert result.returncode == 2
    assert "several points per match (era current, hf2019)" in result.stderr


def bad_inputs(tmp_path):
    good = write_run(tmp_path / "good", synthetic_rows(seed=1))
    (tmp_path / "empty").mkdir()
    corrupt = tmp_path / "corrupt" / "results"
    corrupt.mkdir(parents=True)
    (corrupt / "summary.parquet").write_bytes(b"PAR1 this is not parquet")
    foreign = tmp_path / "foreign.parquet"
    pd.DataFrame({"x": [1, 2]}).to_parquet(foreign)
    other = write_run(tmp_path / "other", synthetic_rows(seed=2, models=("gpt2",)))
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    return {
        "missing path": ([tmp_path / "nowhere", good], "no such file or directory"),
        "not a run": ([tmp_path / "empty", good], "is not a run: it has no results"),
        "corrupt summary": ([good, tmp_path / "corrupt"], "not a readable Parquet summary"),
        "not a summary": ([good, foreign], "is not a Duel summary: it has no column era"),
        "no point in common": ([good, other], "no point in common"),
        "threshold word": ([good, good, "--threshold", "fast"], "must be a positive number"),
        "threshold zero": ([good, good, "--threshold", "0"], "must be a positive number"),
        "threshold negative": ([good, good, "--threshold=-0.1"], "must be a positive number"),
        "threshold nan": ([good, good, "--threshold", "nan"], "must be a positive number"),
        "output is a file": ([good, good, "--output", a_file], "exists and is not a folder"),
    }


@pytest.mark.unit
@pytest.mark.parametrize("case", [
    "missing path", "not a run", "corrupt summary", "not a summary", "no point in common",
    "threshold word", "threshold zero", "threshold negative", "threshold nan",
    "output is a file"])
@pytest.mark.unit
def test_bad_input_is_one_line_exit_2_and_no_output(tmp_path, capsys, case):
    arguments, words = bad_inputs(tmp_path)[case]
    output = tmp_path / "out"
    arguments = [str(a) for a in arguments]
    if "--output" not in arguments:
        arguments += ["--output", str(output)]
    status = duel.main(["compare"] + arguments)
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == "" and len(captured.err.splitlines()) == 1, captured.err
    assert words in captured.err and captured.err.startswith("duel compare: error: ")
    assert not output.exists()
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".comparison-")]


@pytest.mark.unit
def test_bad_input_by_the_real_command(tmp_path):
    result = run_cli(tmp_path / "nowhere", tmp_path / "nowhere2", "--output", tmp_path / "out")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "duel compare: error: %s: no such file or directory\n" % (
        tmp_path / "nowhere")
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def two_tiny_runs(tmp_path_factory):
    """Two real runs of the workflow on a tiny model, 2 replicates each; the second names the
    first as its baseline, so the workflow adds the comparison to its outputs."""
    root = tmp_path_factory.mktemp("compare-e2e")
    models = root / "models"
    models.mkdir()
    with open(os.path.join(TEST_MODELS, "tiny-bert-16pos.json")) as handle:
        (models / "tiny-bert-16pos.json").write_text(handle.read())
    settings = dict(QUICK, replicates=2)
    grid = dict(models_dir=str(models), models=["tiny-bert-16pos"], batch_sizes=[1],
                sequence_lengths=[8, 16], modes={"pytorch": ["eager"],
                                                 "tensorflow": ["function"]}, **settings)
    first = root / "first"
    first.mkdir()
    snakemake(first, "results/summary.parquet", "--cores", "2", "--configfile",
              write_config(first, **grid))
    second = root / "second"
    second.mkdir()
    config = write_config(second, baseline=str(first), **grid)
    planned = snakemake(second, "--dry-run", "--cores", "2", "--configfile", config)
    assert "compare_baseline" in planned.stdout  # rule all asks for it
    snakemake(second, "results/comparison/comparison.md", "--cores", "2", "--configfile", config)
    return first, second


@pytest.mark.workflow
def test_two_real_runs_compare_end_to_end(two_tiny_runs, tmp_path):
    first, second = two_tiny_runs
    output = tmp_path / "out"
    result = run_cli(first, second / "results" / "summary.parquet", "--output", output)
    assert result.returncode in (0, 1), result.stderr
    points = pd.read_csv(output / "comparison.csv")
    assert len(points) == 4  # 2 cells x 2 lengths, replicates combined
    assert set(points["replicates_base"]) == {2} == set(points["replicates_new"])
    assert set(points["interval"]) == {"between processes"}
    assert (points["ratio"] > 0).all() and (points["ci_low"] <= points["ci_high"]).all()
    assert set(points["verdict"]) <= {"slower", "faster", "equivalent", "undecided"}
    assert result.returncode == int(points["beyond_threshold"].any())
    environment = pd.read_csv(output / "environment.csv")
    assert "started_at" not in set(environment["column"])  # always differs: not a change
    # The workflow's own comparison (config key baseline) is the same table.
    made = pd.read_csv(second / "results" / "comparison" / "comparison.csv")
    pd.testing.assert_frame_equal(made, points)
    assert (second / "results" / "comparison" / "comparison.png").stat().st_size > 10000
    text = (second / "results" / "comparison" / "comparison.md").read_text()
    assert "(nan)" not in text and "replicates 2" in text


@pytest.mark.workflow
def test_a_bad_baseline_stops_the_workflow_before_any_job(tmp_path):
    config = write_config(tmp_path, baseline=str(tmp_path / "nowhere"))
    result = snakemake(tmp_path, "--cores", "1", "--dry-run", "--configfile", config,
                       check=False)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "config key baseline" in output and "no such file or directory" in output
    assert not (tmp_path / "results").exists()


@pytest.mark.unit
def test_other_methods_are_said_loudly_and_matched_only_when_asked():
    base = changes.read_run_frame(pd.DataFrame(synthetic_rows(seed=1, method="duel")))
    new = changes.read_run_frame(pd.DataFrame(synthetic_rows(seed=2, method="timeit")))
    with pytest.raises(changes.CompareError, match="no point in common"):
        changes.compare(base, new)
    result = changes.compare(base, new, ignore=["method"])
    assert result.warnings[0] == ("DIFFERENT METHODS: base timed with duel, new with timeit "
                                  "(matched across methods: --ignore method).")
    assert set(result.points["statistic"]) == {"mean"}  # the new side's method's figure
    assert len(result.points) == 10 and result.exit_status == 0


GENERATION_STORE = os.path.join(REPO, "tests", "data", "store-8220d59")


def generation_run(index, tensorflow_factor=1.0):
    """Run ``index`` of the version-2 store's two real generation runs (tiny-gpt2, PyTorch eager
    and TensorFlow eager, two processes each), TensorFlow's times multiplied by
    ``tensorflow_factor``."""
    run_id = archive.run_ids(GENERATION_STORE)[index]
    frame = questions.run_frame(GENERATION_STORE, run_id)
    tensorflow = frame["framework"] == "tensorflow"
    for name in ("samples", "first_token_samples"):
        frame.loc[tensorflow, name] = pd.Series(
            [[value * tensorflow_factor for value in values] for values in frame.loc[
                tensorflow, name]], index=frame.index[tensorflow])
    for name in ("median", "mean", "min", "max", "first_token_ms", "per_token_ms"):
        frame.loc[tensorflow, name] = frame.loc[tensorflow, name] * tensorflow_factor
    frame.loc[tensorflow, "tokens_per_s"] = frame.loc[tensorflow, "tokens_per_s"] / \
        tensorflow_factor
    return changes.read_run_frame(frame, run_id)


@pytest.mark.unit
def test_a_changed_generation_verdict_is_reported_beside_the_points(tmp_path):
    """Two real generation runs where PyTorch was faster in both: the verdicts side by side,
    nothing changed; TensorFlow made 100 times faster in the new run: both times' decisions
    change, named in comparison.md, the generation sheet and the command's lines."""
    base, again = generation_run(0), generation_run(1)
    same = changes.compare(base, again).generation
    assert len(same) == 1 and same["change"].tolist() == [""]
    for name in ("first_token", "per_token"):
        assert same[name + "_decision_base"].tolist() == ["PyTorch faster"]
        assert same[name + "_decision_new"].tolist() == ["PyTorch faster"]
        assert (same[name + "_low_new"] < same[name + "_ratio_new"]).all()
        assert (same[name + "_ratio_new"] < same[name + "_high_new"]).all()
    assert (same["tokens_per_s_pt_base"] > same["tokens_per_s_tf_base"]).all()
    assert same["tokens_differ_new"].tolist() == [0]
    assert "None." in report.generation_markdown(same)

    turned = changes.compare(base, generation_run(1, tensorflow_factor=0.01))
    (change,) = turned.generation["change"]
    assert change == ("time to first token: PyTorch faster -> TensorFlow faster; "
                      "time per output token: PyTorch faster -> TensorFlow faster")
    output = tmp_path / "out"
    assert two_runs.compare_and_write(base, generation_run(1, tensorflow_factor=0.01),
                                      str(output)) == 0
    text = (output / "comparison.md").read_text()
    assert "#### Generation verdicts that changed" in text and "1 of 1 pairs changed" in text
    assert "current cpu fp32 generation duel, PyTorch eager vs TensorFlow eager" in text
    assert change in text
    workbook = openpyxl.load_workbook(output / "comparison.xlsx")
    assert workbook.sheetnames == ["summary", "points", "environment", "generation"]
    header = [cell.value for cell in workbook["generation"][1]]
    assert header[-1] == "change" and workbook["generation"].cell(2, len(header)).value == change
    assert changes.compare(changes.read_run_frame(pd.DataFrame(synthetic_rows(seed=1))),
                           changes.read_run_frame(pd.DataFrame(synthetic_rows(seed=2)))
                           ).generation.empty  # no generation: no table, no section
