"""pip's sources handed to uv, and where the CPU build of torch comes from."""
import os
import subprocess
import sys

import pytest

from conftest import PACKAGE_PATH
from duel.host.stacks import pip_sources


@pytest.mark.unit
def test_pips_sources_become_uvs_options_weighing_every_index():
    options, environment = pip_sources.uv_options({
        "find-links": "/opt/wheels", "extra-index-url": "file:///a/simple file:///b/simple",
        "cert": "/etc/ca.crt"})
    assert options == ["--find-links", "/opt/wheels", "--extra-index-url", "file:///a/simple",
                       "--extra-index-url", "file:///b/simple",
                       "--index-strategy", "unsafe-best-match"]
    assert environment == {"SSL_CERT_FILE": "/etc/ca.crt"}
    assert pip_sources.uv_options({})[0] == []  # pip's defaults: uv's defaults


@pytest.mark.unit
def test_torchs_cpu_builds_come_from_uvs_torch_backend_or_the_mirror_named():
    assert pip_sources.torch_cpu_options({}) == ["--torch-backend", "cpu"]
    mirror = "http://127.0.0.1:8080/simple"
    assert pip_sources.torch_cpu_options({"DUEL_TORCH_INDEX": mirror}) == [
        "--extra-index-url", mirror]
    printed = subprocess.run(  # what scripts/setup.sh reads, one option a line
        [sys.executable, "-m", "duel.host.stacks.pip_sources", "--torch-cpu"],
        capture_output=True, text=True, check=True,
        env=dict(os.environ, DUEL_TORCH_INDEX=mirror, **PACKAGE_PATH))
    assert printed.stdout.splitlines() == ["--extra-index-url", mirror]
