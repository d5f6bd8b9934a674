"""Run manifests and `duel rebuild`: a tiny run, a newer commit, a rebuild of the old run.

The repository under test is copied into a scratch clone (the checkout's files as one commit), so
the test can add a commit on top without touching the real checkout.
"""
import os
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from conftest import QUICK, REPO, TEST_MODELS, shard_file, write_config
from duel.host.provenance import runs
from duel.host.stacks import eras

pytestmark = pytest.mark.workflow

MODEL = "tiny-bert-16pos"


def git(folder, *args):
    return subprocess.run(("git", "-C", str(folder)) + args, capture_output=True, text=True,
                          check=True).stdout.strip()


def scratch_clone(target):
    """A clone of this checkout with its working tree (uncommitted files too) as one commit."""
    subprocess.run(["git", "clone", "--quiet", REPO, str(target)], check=True)
    listed = subprocess.run(["git", "-C", REPO, "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, text=True, check=True).stdout
    for path in filter(None, listed.split("\0")):
        source = os.path.join(REPO, path)
        if os.path.isfile(source) and not os.path.islink(source):
            os.makedirs(os.path.dirname(os.path.join(str(target), path)), exist_ok=True)
            shutil.copy2(source, os.path.join(str(target), path))
    git(target, "add", "-A")
    git(target, "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit",
        "--quiet", "--allow-empty", "-m", "the checkout under test")
    return git(target, "rev-parse", "HEAD")


def own_code(checkout):
    """The environment that makes ``checkout``'s package the one imported."""
    return dict(os.environ, PYTHONPATH=os.path.join(str(checkout), "scripts"))


def snakemake_at(checkout, workdir, *args):
    command = [sys.executable, "-m", "snakemake", "-s", os.path.join(str(checkout), "Snakefile"),
               "--directory", str(workdir)] + list(args)
    result = subprocess.run(command, cwd=str(workdir), capture_output=True, text=True,
                            timeout=1200, env=own_code(checkout))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return result


def rebuild_run(checkout, *args):
    return subprocess.run([sys.executable, "-m", "duel.host.cli", "rebuild"] + list(args),
                          capture_output=True, text=True, timeout=1800, env=own_code(checkout))


def only_manifest(run):
    found = runs.manifests(os.path.join(str(run), "results"))
    assert len(found) == 1, found
    return found[0][1]


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    """A tiny run at commit A; commit B on top changes config.yaml's seed; B rebuilds A's run."""
    base = tmp_path_factory.mktemp("rebuild")
    repository = base / "repository"
    old_commit = scratch_clone(repository)
    models = base / "models"
    models.mkdir()
    shutil.copy(os.path.join(TEST_MODELS, MODEL + ".json"), str(models))
    run = base / "run"
    run.mkdir()
    config = write_config(run, models_dir=str(models), models=[MODEL], frameworks=["pytorch"],
                          modes={"pytorch": ["eager"]}, batch_sizes=[1], sequence_lengths=[8],
                          **QUICK)
    snakemake_at(repository, run, "--cores", "1", "--configfile", config)
    defaults = (repository / "config" / "config.yaml").read_text()
    assert "\nseed: 0\n" in defaults
    (repository / "config" / "config.yaml").write_text(defaults.replace("\nseed: 0\n",
                                                                        "\nseed: 7\n"))
    git(repository, "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit",
        "--quiet", "-am", "a new default seed")
    new = base / "new"
    result = rebuild_run(repository, str(run), "--output", str(new), "--cores", "1")
    return repository, old_commit, run, new, result


def test_a_run_records_its_manifest(rebuilt):
    repository, old_commit, run, _, _ = rebuilt
    record = only_manifest(run)
    assert record["status"] == "success" and record["ended_at"] >= record["started_at"]
    assert record["git_commit"] == old_commit and record["git_dirty"] is False
    assert record["config"]["seed"] == 0 and record["config"]["models"] == [MODEL]
    shard = os.path.relpath(shard_file(run, "pytorch", "eager", MODEL), str(run))
    assert record["shards"] == [shard]
    lock = eras.lock_file(str(repository), "current", "cpu")
    assert record["environments"][0]["lock_sha256"] == eras.lock_sha256(lock)
    assert len(record["environments"][0]["installed_sha256"]) == 64
    assert any(text and MODEL in text for text in record["files"]["model_files"].values())
    assert any(path.endswith("test-config.yaml") for path in record["files"]["config_files"])
    assert record["snakemake_version"] and "--configfile" in record["command_line"]
    assert record["machine"]["cpu_model"] and record["machine"]["cores"] == 1


def test_a_dry_run_writes_no_manifest(rebuilt):
    _, _, run, _, _ = rebuilt
    before = runs.manifests(os.path.join(str(run), "results"))
    snakemake_at(REPO, run, "-n", "--cores", "1", "--configfile", str(run / "test-config.yaml"))
    assert runs.manifests(os.path.join(str(run), "results")) == before


def test_the_rebuild_runs_the_old_code_with_the_old_config(rebuilt):
    _, old_commit, run, new, result = rebuilt
    assert os.path.exists(shard_file(new, "pytorch", "eager", MODEL)), result.stderr[-4000:]
    table = pq.read_table(shard_file(new, "pytorch", "eager", MODEL)).to_pandas()
    assert set(table["git_commit"]) == {old_commit}  # not the newer commit, not "+dirty"
    assert set(table["seed"]) == {0}  # the recorded config's seed, not the new default 7
    original = only_manifest(run)
    rebuild_record = only_manifest(new)
    assert rebuild_record["git_commit"] == old_commit
    assert ([row["lock_sha256"] for row in rebuild_record["environments"]]
            == [row["lock_sha256"] for row in original["environments"]])
    assert ([row["installed_sha256"] for row in rebuild_record["environments"]]
            == [row["installed_sha256"] for row in original["environments"]])


def test_the_rebuild_says_first_what_is_the_same(rebuilt):
    _, old_commit, _, _, result = rebuilt
    lines = result.stdout.splitlines()
    assert lines[0] == "same code: yes, commit %s" % old_commit[:12], result.stdout
    assert lines[1].startswith("same software: yes (current-cpu lock "), lines[1]
    assert lines[2].startswith("same hardware: yes ("), lines[2]


def test_the_rebuild_compares_itself_with_the_original(rebuilt):
    repository, _, _, new, result = rebuilt
    # Nothing clearly slower beyond the threshold (exit 0; a point may still be called faster or
    # slower within it), or a point that one process per side on a busy machine calls slower
    # beyond it (exit 1): the comparison's summary says which, in the same words as the exit.
    assert result.returncode in (0, 1), result.stdout + result.stderr
    files = os.listdir(str(new / "comparison"))
    assert "comparison.md" in files and "comparison.xlsx" in files
    with open(str(new / "comparison" / "comparison.md")) as handle:
        summary = handle.read()
    expected = "Exit 0: no point clearly slower" if result.returncode == 0 else "Exit 1: "
    assert expected in summary, summary


# Bad input: one clear line, exit 2, before any job (no snakemake log appears).

def fake_run(folder, commit, images=()):
    """A run folder with one shard path and a manifest naming it (nothing is ever run)."""
    shard = os.path.relpath(shard_file(folder, "pytorch", "eager", MODEL), str(folder))
    os.makedirs(os.path.dirname(os.path.join(str(folder), shard)))
    open(os.path.join(str(folder), shard), "w").close()
    record = {"started_at": "2026-01-01T00:00:00+00:00", "status": "success",
              "git_commit": commit, "git_dirty": False, "shards": [shard],
              "images": list(images), "config": {}, "environments": [], "machine": {}}
    os.makedirs(str(folder / "results" / "runs" / "one"))
    runs.write(record, str(folder / "results" / "runs" / "one" / "manifest.json"))


def refused(result):
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("duel rebuild: error: "), result.stderr
    return lines[0]


def test_a_folder_without_a_manifest_is_refused_with_what_to_do(tmp_path):
    (tmp_path / "run" / "results" / "shards").mkdir(parents=True)
    line = refused(rebuild_run(REPO, str(tmp_path / "run"), "--output", str(tmp_path / "new")))
    assert "no run manifest" in line and "duel compare" in line
    assert not (tmp_path / "new").exists()


def test_a_commit_not_in_the_repository_is_refused(tmp_path):
    fake_run(tmp_path / "run", "0123456789abcdef0123456789abcdef01234567")
    line = refused(rebuild_run(REPO, str(tmp_path / "run"), "--output", str(tmp_path / "new")))
    assert "commit 0123456789abcdef0123456789abcdef01234567 is not in the repository" in line
    assert "fetch it first" in line
    assert not (tmp_path / "new").exists()


def test_an_absent_recorded_image_is_refused_with_its_build_command(tmp_path):
    image = {"era": "current", "device": "cpu", "runner": "docker",
             "image": "duel/current-cpu:gone", "image_id": "sha256:" + "0" * 64}
    fake_run(tmp_path / "run", git(REPO, "rev-parse", "HEAD"), [image])
    line = refused(rebuild_run(REPO, str(tmp_path / "run"), "--output", str(tmp_path / "new")))
    assert "duel/current-cpu:gone" in line
    assert "duel image build current cpu" in line
    assert not (tmp_path / "new").exists()


def test_an_uninstallable_lock_fails_its_build_naming_the_packages(tmp_path):
    lock = tmp_path / "old.txt"
    lock.write_text("# requires-python: %d.%d\n--no-index\nduel-gone-package==0.0.1\n"
                    "six==1.0.0\n" % sys.version_info[:2])
    with open(str(tmp_path / "build.log"), "w") as log:
        with pytest.raises(eras.EraError) as error:
            eras.build_env("old", str(lock), str(tmp_path / "env"), log)
    assert "duel-gone-package==0.0.1" in str(error.value)
    assert not (tmp_path / "env" / eras.MARKER).exists()


def test_environments_of_two_locks_sit_side_by_side(tmp_path):
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    one.write_text("six==1.16.0\n")
    two.write_text("six==1.17.0\n")
    prefixes = {eras.keyed_prefix(".era-envs", "hf2019", "cpu", str(lock)) for lock in (one, two)}
    assert len(prefixes) == 2
    assert all(prefix.startswith(os.path.join(".era-envs", "hf2019", "cpu", ""))
               for prefix in prefixes)


def test_era_current_runs_in_the_workflow_env_only_while_it_holds_its_lock(tmp_path):
    lock = eras.lock_file(REPO, "current", "cpu")
    assert eras.in_workflow_env("current", "cpu", lock)
    old = tmp_path / "current-cpu.txt"
    old.write_text(open(lock).read().replace("pandas==", "pandas==0.0.1\n# was pandas=="))
    assert not eras.in_workflow_env("current", "cpu", str(old))
    assert eras.workflow_env_mismatches(str(old)) == ["pandas==0.0.1 (here: %s)"
                                                % __import__("pandas").__version__]


def test_a_folder_of_several_runs_is_rebuilt_part_by_part(tmp_path):
    """Each shard belongs to the newest run that wrote it; a shard no run names is reported."""
    from duel.host.provenance import rebuild

    results = tmp_path / "results"
    shards = ["results/shards/%s.parquet" % name for name in ("a", "b", "c")]
    for shard in shards:
        os.makedirs(str(tmp_path / os.path.dirname(shard)), exist_ok=True)
        open(str(tmp_path / shard), "w").close()
    for name, started, commit, wrote in (("old", "2026-01-01", "1" * 40, shards[:2]),
                                         ("new", "2026-02-01", "2" * 40, shards[1:2])):
        os.makedirs(str(results / "runs" / name))
        runs.write({"started_at": started, "git_commit": commit, "shards": wrote,
                    "status": "success"}, str(results / "runs" / name / "manifest.json"))
    parts, orphans = rebuild.plan_parts(str(results))
    assert [(record["git_commit"][0], owned) for _, record, owned in parts] == [
        ("1", [shards[0]]), ("2", [shards[1]])]
    assert orphans == [shards[2]]
    assert runs.shards_without_manifest(shards, str(results)) == [shards[2]]


def test_a_subset_of_models_and_cells_narrows_the_recorded_config(tmp_path):
    from duel.host.provenance import rebuild

    record = {"config": {"models": ["gpt2", MODEL], "frameworks": ["pytorch", "tensorflow"],
                         "modes": {"pytorch": ["eager"], "tensorflow": ["eager", "function"]},
                         "era_envs_dir": ".era-envs", "seed": 3},
              "files": {"model_files": {"/elsewhere/models/%s.json" % MODEL: "{}"}}}
    path = rebuild.write_inputs(record, str(tmp_path), "/checkout", [MODEL],
                                [("tensorflow", "function")])
    with open(path) as handle:
        config = __import__("yaml").safe_load(handle)
    assert config["models"] == [MODEL] and config["seed"] == 3
    assert config["frameworks"] == ["tensorflow"]
    assert config["modes"] == {"tensorflow": ["function"]}
    assert config["era_envs_dir"] == "/checkout/.era-envs"  # shared with this checkout's
    assert (tmp_path / "models" / (MODEL + ".json")).read_text() == "{}"
    assert config["models_dir"] == str(tmp_path / "models")
    with pytest.raises(rebuild.RebuildError, match="--models: bert not in the run"):
        rebuild.write_inputs(record, str(tmp_path), "/checkout", ["bert"], None)
