"""Charts from a small merged table of real shards: every expected file, gaps marked, not lost."""
import os

import re

import numpy as np
import pytest

from conftest import REPO
from duel.cell import contract, shard
from duel.host.render import chart_kinds
from duel.host.render.plots.draw import draw_all
from duel.host.store import archive, questions
from duel.host.tables import summary
from duel.host.verdicts import statistics

pytestmark = pytest.mark.unit

POINTS = [(1, 8), (1, 64), (2, 8)]
# (era, framework, mode, model, speed, {point: status}): a small run with every kind of gap.
CELLS = [
    ("current", "pytorch", "eager", "gpt2", 1.0, {}),
    ("current", "tensorflow", "eager", "gpt2", 1.3, {(1, 64): "oom"}),
    ("current", "tensorflow", "function", "gpt2", 0.8, {(2, 8): "error"}),
    ("current", "pytorch", "torchscript", "gpt2", 0.9, {}),
    ("current", "pytorch", "eager", "bert", 2.0, {(2, 8): "skipped"}),
    ("current", "tensorflow", "eager", "bert", 2.0, {}),
    ("current", "tensorflow", "function", "bert", 1.5, {}),
    ("current", "pytorch", "torchscript", "bert", 1.8, {}),
    ("hf2019", "pytorch", "eager", "gpt2", 1.5, {}),
    ("hf2019", "tensorflow", "function", "gpt2", 1.6, {(2, 8): "oom"}),
]
VERSIONS = {("current", "pytorch"): "2.13.0", ("current", "tensorflow"): "2.21.0",
            ("hf2019", "pytorch"): "1.3.0", ("hf2019", "tensorflow"): "2.0.0"}


def cell_rows(era, framework, mode, model, speed, status_of, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for batch, length in POINTS:
        row = contract.empty_row()
        row.update(era=era, device="cpu", framework=framework, mode=mode, task="inference",
                   model=model, batch_size=batch, seq_len=length, method="duel",
                   cpu_model="Test CPU", threads=2,
                   framework_version=VERSIONS[(era, framework)], python="3.11.7")
        status = status_of.get((batch, length), "ok")
        row["status"] = status
        if status == "ok":
            samples = list(speed * batch * length * (1.0 + 0.05 * rng.standard_normal(12)))
            row.update(samples=samples, n_samples=len(samples), median=float(np.median(samples)),
                       mean=float(np.mean(samples)), min=min(samples), max=max(samples),
                       peak_host_rss_mb=500.0 + batch * length, flops=1e9 * batch * length,
                       achieved_gflops=1e9 * batch * length / np.median(samples) / 1e6)
        else:
            row["message"] = "injected %s" % status
        rows.append(row)
    return rows


def write_run(folder, cells):
    paths = []
    for index, cell in enumerate(cells):
        path = os.path.join(str(folder), "shard-%d.parquet" % index)
        shard.write_shard(cell_rows(*cell, seed=index), path)
        paths.append(path)
    return summary.read_shards(paths)


def draw(frame, folder, kinds=chart_kinds.KINDS):
    folders = {kind: os.path.join(str(folder), kind) for kind in kinds}
    return draw_all(frame, statistics.point_ratios(frame), folders), folders


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """Every kind drawn once from the small run (drawing is the slow part)."""
    folder = tmp_path_factory.mktemp("plots")
    return draw(write_run(folder, CELLS), folder / "plots")


def test_every_kind_draws_a_figure_per_scope_as_png_and_svg(drawn):
    written, folders = drawn
    scopes = ["current_cpu_fp32_inference_duel", "hf2019_cpu_fp32_inference_duel"]
    expected = {
        "ratio": scopes, "frameworks": scopes, "length": scopes, "memory": scopes,
        "gflops": scopes,
        # only era current has a graph mode beside its eager mode
        "modes": ["current_cpu_fp32_inference_duel"],
        # PyTorch eager and TensorFlow function ran in both eras
        "eras": ["cpu_fp32_inference_duel_pytorch_eager",
                 "cpu_fp32_inference_duel_tensorflow_function"],
    }
    for kind, stems in expected.items():
        files = sorted(os.listdir(folders[kind]))
        assert files == sorted("%s.%s" % (stem, ext) for stem in stems for ext in ("png", "svg"))
        assert sorted(written[kind]) == sorted(os.path.join(folders[kind], f) for f in files)
        for name in files:
            path = os.path.join(folders[kind], name)
            assert os.path.getsize(path) > 5000, path
            with open(path, "rb") as handle:
                head = handle.read(200)
            assert head.startswith(b"\x89PNG") if name.endswith(".png") else b"<svg" in \
                open(path, "rb").read(2000)
    # no text generated: one figure saying so
    assert sorted(os.listdir(folders["generation"])) == ["not-in-this-run.png",
                                                         "not-in-this-run.svg"]
    assert "No text generation" in svg_text(folders["generation"], "not-in-this-run")


def svg_text(folder, stem):
    """The text of an SVG (kept as text, see plots.base.STYLE), wrapped lines joined by spaces."""
    with open(os.path.join(folder, stem + ".svg")) as handle:
        return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", handle.read()))


def test_gaps_are_marked_and_titles_name_hardware_and_era(drawn):
    _, folders = drawn
    stem = "current_cpu_fp32_inference_duel"
    bars = svg_text(folders["frameworks"], stem)
    assert "OOM" in bars and "N/A" in bars and "error" in bars  # each gap where its bar would be
    assert "Test CPU, 2 threads" in bars and "era current" in bars and "torch 2.13.0" in bars
    assert "ms, log" in bars and "batch size x sequence length (tokens)" in bars
    lines = svg_text(folders["length"], stem)
    assert "OOM" in lines and "N/A" in lines and "sequence length (tokens)" in lines
    heat = svg_text(folders["ratio"], stem)
    assert "TensorFlow OOM" in heat and "PyTorch N/A" in heat
    assert "PyTorch time / TensorFlow time" in heat
    modes = svg_text(folders["modes"], stem)  # the mode's own gap, or its eager point's
    assert "error" in modes and "OOM" in modes and "N/A" in modes
    memory = svg_text(folders["memory"], stem)
    assert "(MiB)" in memory
    eras = svg_text(folders["eras"], "cpu_fp32_inference_duel_tensorflow_function")
    assert "era hf2019 (TensorFlow 2.0.0)" in eras and "OOM" in eras
    assert "Eras hf2019, current" in eras


def test_the_heat_map_marks_each_decision_and_reads_a_table_without_them(tmp_path):
    frame = write_run(tmp_path, [cell for cell in CELLS[:2]])
    ratios = statistics.point_ratios(frame)
    ratios["ratio"] = [0.5, None, 0.99]  # 1x8, 1x64 (TensorFlow OOM), 2x8
    ratios["ci_low"], ratios["ci_high"] = [0.45, None, 0.97], [0.55, None, 1.02]
    ratios["decision"] = ["faster", None, "equivalent"]
    stem = "current_cpu_fp32_inference_duel"
    for table, folder in ((ratios, "new"), (ratios.drop(columns="decision"), "old")):
        draw_all(frame, table, {"ratio": str(tmp_path / folder)})
        heat = svg_text(str(tmp_path / folder), stem)
        assert "0.50 " in heat + " " and "0.99=" in heat and "TensorFlow OOM" in heat, heat
        assert "'=': equivalent" in heat and "'?': undecided" in heat
    ratios["decision"] = ["faster", None, "undecided"]
    draw_all(frame, ratios, {"ratio": str(tmp_path / "undecided")})
    assert "0.99?" in svg_text(str(tmp_path / "undecided"), stem)


def test_a_kind_this_run_cannot_show_says_why(tmp_path):
    eager_only = [cell for cell in CELLS if cell[0] == "current" and cell[2] == "eager"]
    written, folders = draw(write_run(tmp_path, eager_only), tmp_path / "plots",
                            kinds=("modes", "eras", "frameworks"))
    for kind, words in (("modes", "no speed-up to show"), ("eras", "eras: [hf2019, current]")):
        assert sorted(os.listdir(folders[kind])) == ["not-in-this-run.png", "not-in-this-run.svg"]
        assert words in svg_text(folders[kind], "not-in-this-run")
    assert len(written["frameworks"]) == 2


def test_drawing_twice_gives_the_same_svg(tmp_path):
    frame = write_run(tmp_path, CELLS[:2])
    ratios = statistics.point_ratios(frame)
    texts = []
    for attempt in ("a", "b"):
        folder = os.path.join(str(tmp_path), attempt)
        draw_all(frame, ratios, {"frameworks": folder})
        texts.append(svg_text(folder, "current_cpu_fp32_inference_duel"))
    assert texts[0] == texts[1]


def test_the_generation_chart_shows_both_times_of_a_real_run_and_marks_a_failed_side(tmp_path):
    """A stored real generation run (tests/data/store-8220d59: tiny-gpt2 1x8, PyTorch eager and
    TensorFlow eager, two processes each): a figure per scope with a panel per time, PyTorch
    clearly faster in both (filled markers below 1 on a log axis); with TensorFlow's point
    failed, the point is marked with its status instead."""
    store = os.path.join(REPO, "tests", "data", "store-8220d59")
    frame = questions.run_frame(store, archive.run_ids(store)[0])
    stem = "current_cpu_fp32_generation_duel"
    written, folders = draw(frame, tmp_path / "ok", ["generation"])
    assert sorted(os.path.basename(path) for path in written["generation"]) == [
        stem + ".png", stem + ".svg"]
    chart = svg_text(folders["generation"], stem)
    for words in ("Time to first token", "Time per output token", "PyTorch eager / TensorFlow "
                  "eager", "tiny-gpt2 1x8", "1: PyTorch faster, log)", "era current"):
        assert words in chart, words
    assert "error" not in chart
    failed = frame.copy()
    failed.loc[failed["framework"] == "tensorflow", "status"] = "error"
    _, folders = draw(failed, tmp_path / "failed", ["generation"])
    assert "TensorFlow error" in svg_text(folders["generation"], stem)
