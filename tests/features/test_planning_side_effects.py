"""Planning changes nothing on disk except in a real run's main invocation, and a job's own
re-parse (on a SLURM node) probes nothing the main invocation has checked already."""
import json
import os

import pytest

from conftest import REPO, shard_file, snakemake
from duel.host.stacks import eras

pytestmark = pytest.mark.workflow

GRID = ["models=[gpt2]", "frameworks=[pytorch]"]


def stale_environment(tmp_path):
    """An hf2019 cpu environment whose marker names another lock file: stale."""
    from pathlib import Path
    prefix = Path(eras.keyed_prefix(str(tmp_path / "envs"), "hf2019", "cpu",
                                    eras.lock_file(REPO, "hf2019", "cpu")))
    (prefix / "bin").mkdir(parents=True)
    marker = prefix / eras.MARKER
    marker.write_text(json.dumps({"era": "hf2019", "lock_sha256": "0" * 64}))
    return str(marker)


def test_a_dry_run_reports_a_stale_environment_and_leaves_its_marker(tmp_path):
    marker = stale_environment(tmp_path)
    config = ["eras=[hf2019]", "era_envs_dir=%s" % (tmp_path / "envs")] + GRID
    dry = snakemake(tmp_path, "-n", "--cores", "1", "--config", *config)
    assert "would be built by a real run" in dry.stderr + dry.stdout
    assert "another version of hf2019.txt" in dry.stderr + dry.stdout
    assert os.path.exists(marker)
    snakemake(tmp_path, "--lint", "--config", *config, check=False)
    assert os.path.exists(marker)
    # A real run discards it (the build itself is left out here: --omit-from).
    real = snakemake(tmp_path, "--cores", "1", "--omit-from", "build_era_env", "--config", *config)
    assert "will be built" in real.stderr + real.stdout
    assert not os.path.exists(marker)


def test_a_jobs_own_re_parse_does_not_probe_the_docker_engine(tmp_path):
    environment = dict(os.environ, DOCKER_HOST="unix://%s" % (tmp_path / "no-engine.sock"))
    config = ["runner=docker"] + GRID
    main = snakemake(tmp_path, "-n", "--cores", "1", "--config", *config, check=False,
                     env=environment)
    assert main.returncode != 0
    assert "needs a running Docker engine" in main.stdout + main.stderr
    shard = os.path.relpath(shard_file(tmp_path, "pytorch", "eager", "gpt2"), str(tmp_path))
    job = snakemake(tmp_path, "--mode", "remote", "-n", "--cores", "1", shard, "--config",
                    *config, env=environment)
    assert "Docker engine" not in job.stdout + job.stderr
