"""The README's commands work as written: every command of its shell blocks is run here, planned
here, or named with what it needs that this machine lacks. The documents it links name what
exists: each fault's test (docs/faults.md), each folder and each package of the code (the Layout
of CONTRIBUTING.md).

They run literally, in a copy of the checkout whose default grid (config/config.yaml) is the tiny
BERT, PyTorch eager, one point, quick timing: the README's own grid would take many minutes.
Commands whose grid stays long even so (a --config on the command line beats any config file)
are planned (`-n` appended): their syntax and planning are what is checked; the README's subsets of
this suite are collected (`--collect-only`). A command added to the README must be added to
COMMANDS below, or this test fails naming it.
"""
import glob
import os
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import QUICK, REPO, TEST_MODELS

RUN, PLAN, COLLECT = "run", "plan", "collect"
OUT_OF_REACH = {
    "docker": "a Docker engine and an image (tests/features/test_docker.py builds one and runs "
              "cells)",
    "apptainer": "Apptainer, which cannot be installed here (tests/host/stacks/test_images.py "
                 "runs its wiring with a stand-in)",
    "slurm": "a SLURM cluster (tests/features/test_slurm.py starts one and runs this profile)",
}
# Every command of the README's ```bash blocks (comments dropped, continued lines joined), and
# what this test does with it, in the README's order.
COMMANDS = {
    "bash scripts/setup.sh && .venv/bin/snakemake --cores all": RUN,
    "bash scripts/setup.sh --tests && .venv/bin/python -m pytest tests":
        "this suite itself (.ci/run runs exactly this)",
    # a dry run (-n), after the run above: it plans and runs nothing
    ".venv/bin/snakemake --cores all -n": RUN,
    ".venv/bin/snakemake --cores all --configfile config/demo.yaml": PLAN,
    ".venv/bin/snakemake --report results/report.html": RUN,
    ".venv/bin/python -m pytest -m unit": COLLECT,
    ".venv/bin/python -m pytest -m \"not era and not docker and not slurm and not install\"":
        COLLECT,
    ".venv/bin/python -m pytest -m \"era or docker or slurm or install\"": COLLECT,
    ".venv/bin/snakemake --cores all --config 'models=[gpt2,roberta-base]' 'batch_sizes=[1,8]' "
    "'sequence_lengths=[128,512]' 'frameworks=[tensorflow]' 'modes={tensorflow: [function]}' "
    "'method=[duel,timeit]'": PLAN,
    ".venv/bin/snakemake --cores all --configfile config/presets/quick.yaml": PLAN,
    ".venv/bin/snakemake --cores all --configfile config/presets/rigorous.yaml": PLAN,
    # every workflow test runs Snakemake this way (conftest.snakemake): planned here
    "CHECKOUT/.venv/bin/snakemake -s CHECKOUT/Snakefile --directory OUT --configfile my.yaml "
    "--cores all": PLAN,
    ".venv/bin/snakemake --cores all --configfile config/timeline.yaml": PLAN,
    ".venv/bin/snakemake --cores all --configfile config/paper-2019.yaml": PLAN,
    ".venv/bin/snakemake --cores all --configfile config/paper-2019.yaml --config "
    "'models=[bert-base-cased,gpt2]' 'batch_sizes=[1]' 'sequence_lengths=[8,128]'": PLAN,
    ".venv/bin/duel lock": "regenerates the locks (tests/cell/test_locks.py runs it)",
    ".venv/bin/duel lock --upgrade-package numpy":
        "a deliberate upgrade of one pin (tests/cell/test_locks.py runs the regeneration)",
    ".venv/bin/duel lock -- --extra-index-url URL":
        "a regeneration with another source (URL is the user's)",
    ".venv/bin/duel image build current cpu --local-base": OUT_OF_REACH["docker"],
    ".venv/bin/snakemake --cores all --config runner=docker": OUT_OF_REACH["docker"],
    ".venv/bin/duel image build current cpu --engine apptainer":
        OUT_OF_REACH["apptainer"],
    ".venv/bin/snakemake --cores all --config runner=apptainer --sdm apptainer "
    "--apptainer-args=\"--nv\"": OUT_OF_REACH["apptainer"],
    "bash scripts/setup.sh --slurm": OUT_OF_REACH["slurm"],
    ".venv-slurm/bin/snakemake --profile config/profiles/slurm --config cell_threads=16 "
    "--default-resources slurm_partition=NAME slurm_account=NAME": OUT_OF_REACH["slurm"],
    ".venv/bin/duel compare BASE NEW --output DIR":
        "a comparison of two runs (tests/host/compare/test_changes.py runs it on two tiny runs)",
    ".venv/bin/duel rebuild RUN_DIR --output NEW":
        "a rebuild of a past run (tests/host/provenance/test_rebuild.py runs it on a tiny run)",
    ".venv/bin/duel rebuild RUN_DIR --output NEW --models gpt2 --cells "
    "pytorch/eager":
        "a rebuild's subset (tests/host/provenance/test_rebuild.py checks the narrowing)",
    ".venv/bin/duel rebuild RUN_DIR --output NEW --today-stack":
        "a rebuild with today's locks (not run by the tests)",
    ".venv/bin/duel runs": RUN,
    ".venv/bin/duel history bert-base-cased/pytorch/eager/1x128 --machine lab-a": RUN,
    ".venv/bin/duel trend": RUN,
    ".venv/bin/duel compare RUN_A RUN_B --output DIR":
        "a comparison of two stored runs (tests/host/store/test_store.py runs it)",
    ".venv/bin/duel store add DIR --machine a100-node":
        "an add of a folder made elsewhere (tests/host/store/test_store.py runs it)",
    ".venv/bin/duel store rm RUN": "a removal (tests/host/store/test_store.py runs it)",
    ".venv/bin/duel store check --fix":
        "a check of a damaged store (tests/host/store/test_store_faults.py runs it)",
    ".venv/bin/duel publish site": RUN,
    ".venv/bin/duel bisect bert-base-cased/tensorflow/function/1x128 --from hf2019 --to 2.13 "
    "--dry-run": RUN,
    ".venv/bin/duel bisect bert-base-cased/tensorflow/function/1x128 --from hf2019 --to 2.13":
        "a bisection: an hour of environments and runs (benchmarks/results/2026-12-06-bisect.md)",
    ".venv/bin/snakemake --unlock --cores 1": RUN,
    ".venv/bin/snakemake --cores all --rerun-incomplete": RUN,
}
TINY_GRID = dict(QUICK, models=["tiny-bert-16pos"], frameworks=["pytorch"],
                 modes={"pytorch": ["eager"]}, batch_sizes=[1], sequence_lengths=[8])


def readme_commands(path=os.path.join(REPO, "README.md")):
    """The commands of a Markdown file's ```bash blocks, in order."""
    with open(path) as handle:
        blocks = re.findall(r"^```bash\n(.*?)^```", handle.read(), flags=re.M | re.S)
    commands = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                commands.append(" ".join(line.split()))
    return commands


def tiny_checkout(folder):
    """A checkout whose default grid is tiny: the workflow's files copied (Snakemake's base
    folder is the Snakefile's), the code and environment linked, config.yaml made tiny."""
    os.makedirs(folder)
    for name in ("Snakefile", "pyproject.toml", "README.md", "rules", "report", "config"):
        source = os.path.join(REPO, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(folder, name))
        else:
            shutil.copy(source, folder)
    for name in ("scripts", "envs", "containers", "benchmarks", "cpp", ".venv"):
        os.symlink(os.path.join(REPO, name), os.path.join(folder, name))
    shutil.copy(os.path.join(TEST_MODELS, "tiny-bert-16pos.json"),
                os.path.join(folder, "config", "models"))
    path = os.path.join(folder, "config", "config.yaml")
    with open(path) as handle:
        config = yaml.safe_load(handle)
    config.update(TINY_GRID)
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    return folder


def shell(command, cwd, timeout=1200):
    result = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, "%s\n%s\n%s" % (command, result.stdout[-3000:],
                                                   result.stderr[-5000:])
    return result


@pytest.mark.unit
def test_every_readme_command_is_run_planned_or_out_of_reach_here():
    commands = readme_commands()
    assert [command for command in commands if command not in COMMANDS] == []
    assert [command for command in COMMANDS if command not in commands] == []


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    """Every README command this machine can run or plan, in the README's order, in a tiny
    checkout; returns the checkout and the commands done."""
    tmp_path = tmp_path_factory.mktemp("readme")
    checkout = tiny_checkout(str(tmp_path / "checkout"))
    done = []
    for command in readme_commands():
        what = COMMANDS[command]
        if what == COLLECT:  # a subset of this suite: its marker expression selects tests, on
            # one module with unit, workflow and era tests (the whole suite collects in 20 s)
            result = shell(command + " --collect-only -q -p no:cacheprovider "
                           "tests/features/test_era_environments.py", REPO)
            assert "::test_" in result.stdout, command
        elif command.startswith("CHECKOUT/"):  # from elsewhere, with a config file of one's own
            elsewhere = tmp_path / "elsewhere"
            elsewhere.mkdir()
            with open(str(elsewhere / "my.yaml"), "w") as handle:
                yaml.safe_dump(dict(TINY_GRID, seed=1), handle)
            command = command.replace("CHECKOUT", checkout).replace("OUT", str(tmp_path / "out"))
            result = shell(command + " -n", str(elsewhere))
            assert "run_cell" in result.stdout and "make_reference" in result.stdout, command
            done.append(command)
            continue
        elif what == PLAN:
            result = shell(command + " -n", checkout)
            assert "run_cell" in result.stdout, command
        elif what == RUN:
            shell(command, checkout)
        else:
            continue
        done.append(command)
    return checkout, done


@pytest.mark.workflow
def test_the_readme_commands_work_as_written(readme_run):
    checkout, done = readme_run
    assert len(done) == len([command for command in readme_commands()
                             if COMMANDS[command] in (RUN, PLAN, COLLECT)])
    results = os.path.join(checkout, "results")
    for name in ("summary.xlsx", "summary.parquet", "summary.csv", "report.html",
                 os.path.join("statistics", "statistics.html"), "environment.html"):
        assert os.path.getsize(os.path.join(results, name)) > 0, name
    assert os.listdir(os.path.join(results, "plots"))
    with open(os.path.join(results, "report.html")) as handle:
        assert "merge_shards" in handle.read()  # the report holds the rules' code
    # The default run landed in the store by itself (with the --rerun-incomplete run after it),
    # and the published site was written from it.
    from duel.host.store import archive
    assert len(archive.run_ids(os.path.join(results, "store"))) >= 1
    assert os.path.isfile(os.path.join(checkout, "site", "index.html"))


@pytest.mark.workflow
def test_a_corrupt_shard_stops_the_merge_with_one_line_saying_what_to_do(readme_run):
    """The README's run command again after a shard was damaged: one line naming the file, in
    the merge's log and on the console; deleting the shard replans that cell alone."""
    checkout, _ = readme_run
    (shard,) = glob.glob(os.path.join(checkout, "results", "shards", "**", "*.parquet"),
                         recursive=True)
    with open(shard, "r+b") as handle:
        handle.truncate(os.path.getsize(shard) // 2)
    result = subprocess.run(["bash", "-c", ".venv/bin/snakemake --cores all"], cwd=checkout,
                            capture_output=True, text=True, timeout=1200)
    assert result.returncode != 0
    line = ("cannot merge shard %s: not a readable Parquet file, corrupt or truncated "
            "(ArrowInvalid: " % os.path.relpath(shard, checkout))
    with open(os.path.join(checkout, "results", "logs", "merge_shards.log")) as handle:
        log = handle.read()
    assert log.startswith(line) and len(log.splitlines()) == 1, log
    assert log.strip().endswith("Delete it and run the same command again: Snakemake measures "
                                "that cell again, alone.")
    assert result.stderr.count(log.strip()) == 1, result.stderr[-3000:]
    assert "summary.py" not in result.stderr  # no traceback of the merge's code
    os.remove(shard)
    plan = shell(".venv/bin/snakemake --cores all -n", checkout).stdout
    jobs = dict(line.split()[:2] for line in plan.splitlines()
                if line.split()[:1] in (["run_cell"], ["make_reference"], ["merge_shards"]))
    assert jobs == {"run_cell": "1", "merge_shards": "1"}, plan


def fault_table(path=os.path.join(REPO, "docs", "faults.md")):
    """The rows of the fault table (docs/faults.md, which the README links): (fault, test)."""
    with open(path) as handle:
        section = handle.read()
    rows = [line for line in section.splitlines() if line.startswith("| ")][2:]
    return [(row.split(" | ")[0].strip("| "), row.rstrip(" |").split(" | ")[-1].strip("`"))
            for row in rows]


@pytest.mark.unit
def test_every_row_of_the_fault_table_names_a_test_that_exists():
    """The table's last column names the test that makes each fault for real; each must be a
    test function of that file (a renamed or removed test leaves its row unproven)."""
    rows = fault_table()
    assert len(rows) >= 25
    for fault, node in rows:
        module, _, name = node.partition("::")
        with open(os.path.join(REPO, module)) as handle:
            source = handle.read()
        assert re.search(r"^def %s\(" % re.escape(name), source, flags=re.M), (fault, node)


def concept_homes(path=os.path.join(REPO, "CONTRIBUTING.md")):
    """[(concept, [(path, [names])])] of CONTRIBUTING's table of where each concept lives: each
    home is a path in backticks, followed by the names it defines, in backticks too."""
    with open(path) as handle:
        section = handle.read().split("\n## Where each concept lives\n", 1)[1]
    rows = [line for line in section.split("\n## ", 1)[0].splitlines()
            if line.startswith("| ")][2:]
    table = []
    for row in rows:
        concept, homes = row.strip("| ").split(" | ")
        found = []
        for word in re.findall(r"`([^`]+)`", homes):
            if "/" in word:
                found.append((word, []))
            else:
                found[-1][1].append(word)
        table.append((concept, found))
    return table


def missing_homes(table, repo=REPO):
    """The homes of ``table`` (concept_homes) whose file is not there or does not define a name
    given with it."""
    missing = []
    for concept, homes in table:
        for path, names in homes:
            where = os.path.join(repo, path)
            if not os.path.exists(where):
                missing.append(path)
                continue
            source = "" if os.path.isdir(where) else open(where).read()
            missing += ["%s %s" % (path, name) for name in names if not re.search(
                r"^(?:def |class )?%s\b" % re.escape(name), source, flags=re.M)]
    return missing


@pytest.mark.unit
def test_every_concepts_home_in_contributing_exists_and_defines_it():
    table = concept_homes()
    assert len(table) >= 15 and all(homes for _, homes in table)
    assert missing_homes(table) == []
    moved = [("pairs", [("scripts/duel/host/verdicts/pairing.py", []),
                        ("scripts/duel/cell/modes.py", ["MODE_LIST"])])]
    assert missing_homes(moved) == ["scripts/duel/host/verdicts/pairing.py",
                                    "scripts/duel/cell/modes.py MODE_LIST"]


def layout_section(path=os.path.join(REPO, "CONTRIBUTING.md")):
    """The text of the Layout section of CONTRIBUTING.md."""
    with open(path) as handle:
        return handle.read().split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]


def layout_entries(section):
    """The paths the Layout's code block names: each line's first word, an indented one joined
    to the unindented name above it (``  plan/`` under ``scripts/duel/host/``)."""
    (block,) = re.findall(r"^```\n(.*?)^```", section, flags=re.M | re.S)
    entries, parent = set(), ""
    for line in block.splitlines():
        if not line.strip():
            continue
        name = line.split()[0]
        if line[0].isspace():
            entries.add(parent + name)
        else:
            parent = name
            entries.add(name)
    return entries


def layout_required(repo=REPO):
    """What the Layout must name: every top-level folder of the checkout (tracked or not yet,
    but not ignored) and every package of the code under scripts/duel."""
    listed = subprocess.run(["git", "-C", repo, "ls-files", "-co", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    required = {path.split("/", 1)[0] + "/" for path in listed if "/" in path}
    for root, _, files in os.walk(os.path.join(repo, "scripts", "duel")):
        if "__init__.py" in files:
            required.add(os.path.relpath(root, repo).replace(os.sep, "/") + "/")
    return required


def layout_missing(section, repo=REPO):
    """The folders and packages the Layout section leaves out, sorted."""
    return sorted(layout_required(repo) - layout_entries(section))


@pytest.mark.unit
def test_the_layout_names_every_folder_and_package():
    required = layout_required()
    assert {"rules/", "scripts/", "tests/", "scripts/duel/cell/adapters/",
            "scripts/duel/host/plan/"} <= required  # what it checks, found
    assert layout_missing(layout_section()) == []


@pytest.mark.unit
def test_the_layout_check_fails_on_a_missing_folder_or_package():
    section = layout_section()
    without_plan = re.sub(r"^  plan/ .*\n", "", section, flags=re.M)
    without_rules = re.sub(r"^rules/ .*\n", "", section, flags=re.M)
    assert without_plan != section and without_rules != section
    assert layout_missing(without_plan) == ["scripts/duel/host/plan/"]
    assert layout_missing(without_rules) == ["rules/"]
    # a name counts only under its own parent: unindented, plan/ is a top-level folder
    moved = section.replace("  plan/ ", "plan/   ")
    assert "scripts/duel/host/plan/" in layout_missing(moved)
