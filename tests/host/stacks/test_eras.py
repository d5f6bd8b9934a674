"""Eras are entries of envs/eras.yaml: each entry holds to its files, its declared lacks hold to
what the adapters detect, and a new era is one entry that plans, merges and plots."""
import json
import os
import re
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
import yaml

from conftest import PACKAGE_PATH, REPO, era_python, era_shards
from duel.cell import locks, modes, shard
from duel.host.stacks import eras


REGISTRY = eras.registry(REPO)
TASKS = yaml.safe_load(open(os.path.join(REPO, "config", "schema", "config.schema.yaml")))[
    "properties"]["tasks"]["items"]["enum"]


def holds_to_its_files(era, checkout=REPO):
    """An entry of envs/eras.yaml against its files; the locks it declares."""
    assert re.match(r"^\d{4}-\d{2}-\d{2}$", era.date), era
    for device, lock in era.locks.items():
        # in-cell code finds a lock by this name (duel/cell/environment.py)
        assert lock in ("envs/%s-%s.txt" % (era.name, device), "envs/%s.txt" % era.name)
        assert os.path.isfile(os.path.join(checkout, lock)), lock
        assert locks.required_python(os.path.join(checkout, lock)) == era.python, lock
    for device, image in era.images.items():
        assert image == "containers/%s-%s.Dockerfile" % (era.name, device)
        assert os.path.isfile(os.path.join(checkout, image)) and device in era.locks
    for lack in era.lacks:
        assert set(lack) <= {"framework", "mode", "device", "task", "reason"} and lack["reason"]
        assert "mode" in lack or "task" in lack, lack
        if "mode" in lack:
            assert lack["mode"] in modes.mode_names(lack["framework"]), lack
        if "task" in lack:
            assert lack["task"] in TASKS, lack
    return set(era.locks.values())


@pytest.mark.unit
def test_every_entry_holds_to_its_files_and_every_era_lock_has_an_entry():
    declared = set()
    for era in REGISTRY.values():
        declared |= holds_to_its_files(era)
    era_locks = set("envs/" + name for name in os.listdir(os.path.join(REPO, "envs"))
                    if name.endswith(".txt")
                    and locks.required_python(os.path.join(REPO, "envs", name)))
    assert era_locks == declared
    assert list(REGISTRY) == sorted(REGISTRY, key=lambda name: REGISTRY[name].date)


DETECT = r"""
import json, sys
from duel.cell import models, modes
from duel.cell.adapters import load_adapter
spec = models.load_model_spec(sys.argv[1])
generating = models.load_model_spec(sys.argv[2])
lacking = []
adapters = [load_adapter(framework)(modes.mode_names(framework, kinds=modes.IN_PYTHON)[0],
                                    "cpu", "fp32", 1)  # threads are set once, before any use
            for framework in modes.frameworks()]
for framework, adapter in zip(modes.frameworks(), adapters):
    names = modes.mode_names(framework, kinds=modes.IN_PYTHON)
    for name in names:
        adapter.mode = name
        reason = adapter.mode_unsupported(spec)
        if reason:
            lacking.append([framework, name, reason])
    adapter.task = "generation"
    for name in modes.generating(framework):
        adapter.mode = name
        reason = adapter.unsupported_reason(generating)
        if reason:
            lacking.append([framework, name + " generation", reason])
print(json.dumps(lacking))
"""


@pytest.mark.parametrize("era", [pytest.param("hf2019", marks=pytest.mark.era),
                                 pytest.param("hf2021", marks=pytest.mark.era),
                                 pytest.param("hf2023", marks=pytest.mark.era),
                                 pytest.param("current", marks=pytest.mark.framework)])
def test_the_declared_lacks_are_what_the_adapters_detect(era):
    """On the CPU, for a model every mode can trace (BERT): the modes the adapters skip in the
    era's own environment are exactly the modes its entry says it lacks; for a causal language
    model (GPT-2), generation in each mode that generates is skipped exactly where the entry
    lacks it."""
    answer = subprocess.run(
        [era_python(era), "-c", DETECT,
         os.path.join(REPO, "config", "models", "bert-base-cased.json"),
         os.path.join(REPO, "config", "models", "gpt2.json")],
        capture_output=True, text=True, timeout=600,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **PACKAGE_PATH))
    assert answer.returncode == 0, answer.stderr[-3000:]
    detected = set((framework, mode) for framework, mode, _ in json.loads(answer.stdout))
    declared = set((framework, mode) for framework in modes.frameworks()
                   for mode in modes.mode_names(framework, kinds=modes.IN_PYTHON)
                   if eras.lacks(REPO, era, framework, mode, "cpu"))
    declared |= set((framework, name + " generation") for framework in modes.frameworks()
                    for name in modes.generating(framework)
                    if eras.lacks(REPO, era, framework, name, "cpu", "generation"))
    assert detected == declared


def fake_checkout(folder):
    """A checkout whose registry has one more era, fake2025 (its lock a copy of today's): the
    workflow's files copied, the code linked, so the code reads this checkout's registry."""
    os.makedirs(folder)
    for name in ("Snakefile", "rules", "report", "config", "envs"):
        copy = shutil.copytree if os.path.isdir(os.path.join(REPO, name)) else shutil.copy
        copy(os.path.join(REPO, name), os.path.join(folder, name))
    for name in ("scripts", "containers", "cpp", ".venv"):
        os.symlink(os.path.join(REPO, name), os.path.join(folder, name))
    shutil.copy(os.path.join(REPO, "envs", "current-cpu.txt"),
                os.path.join(folder, "envs", "fake2025-cpu.txt"))
    path = os.path.join(folder, "envs", "eras.yaml")
    registry = yaml.safe_load(open(path))
    registry["eras"]["fake2025"] = {"date": "2025-06-01", "label": "a test's era",
                                    "python": "3.11", "locks": {"cpu": "envs/fake2025-cpu.txt"},
                                    "lacks": [{"framework": "pytorch", "mode": "compile"}]}
    with open(path, "w") as handle:
        yaml.safe_dump(registry, handle)
    return folder


MERGE_AND_PLOT = r"""
import sys
from duel.host.render import spreadsheet
from duel.host.render.plots import base, draw
from duel.host.stacks import eras
from duel.host.tables import summary
from duel.host.verdicts import pairs, timeline
frame = summary.read_shards(sys.argv[3:])
assert eras.CHECKOUT == sys.argv[1], eras.CHECKOUT
spreadsheet.write_workbook(frame, sys.argv[2] + "/summary.xlsx")
written = draw.draw_all(frame, None, {"eras": sys.argv[2] + "/eras",
                                      "timeline": sys.argv[2] + "/timeline"})
print(sorted(pairs.cross_era(frame)["era_new"].unique()), base.era_colour("fake2025"))
print(timeline.medians(frame)[["era", "era_date"]].drop_duplicates().values.tolist())
print(len(written["eras"]), len(written["timeline"]))
"""


@pytest.mark.workflow
def test_an_era_added_in_one_place_plans_merges_and_plots(tmp_path):
    checkout = fake_checkout(str(tmp_path / "checkout"))
    plan = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "--config",
         "eras=[fake2025,current]", "models=[gpt2]", "batch_sizes=[1]", "sequence_lengths=[8]",
         "modes={pytorch: [eager, compile], tensorflow: [eager]}", "replicates=1"],
        cwd=checkout, capture_output=True, text=True, timeout=600)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "era fake2025 lacks pytorch compile: declared (envs/eras.yaml): no cell planned" \
        in plan.stderr
    jobs = re.findall(r"^\s+output: (results/shards/\S+)", plan.stdout, flags=re.M)
    assert "results/shards/fake2025/cpu/pytorch/eager/fp32/inference/gpt2/r1.parquet" in jobs
    assert not [job for job in jobs if "/fake2025/cpu/pytorch/compile/" in job]
    # Its shards (today's rows, relabelled as the fake era's) merge and plot beside today's.
    paths = []
    for era, path in zip(("fake2025", "current"), era_shards(tmp_path)):
        rows = pq.read_table(path).to_pylist()
        for row in rows:
            row.update(era=era, framework_version="2.13.0" if era == "current" else "9.9")
        shard.write_shard(rows, path)
        paths.append(path)
    out = tmp_path / "out"
    out.mkdir()
    # The fake checkout's own code first on the path, before the installed package.
    answer = subprocess.run([sys.executable, "-c", MERGE_AND_PLOT, checkout, str(out)] + paths,
                            capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, PYTHONPATH=os.path.join(checkout, "scripts")))
    assert answer.returncode == 0, answer.stderr[-3000:]
    lines = answer.stdout.splitlines()
    assert lines[0].startswith("['current']") and "#000000" not in lines[0]
    assert lines[1] == "[['fake2025', '2025-06-01'], ['current', '2026-11-29']]"
    assert lines[2] == "2 2"  # a PNG and an SVG of each
