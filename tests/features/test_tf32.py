"""TF32: one config key sets both frameworks' switches the same way (strict fp32 by default),
each row records what the framework reports, and the GFLOP/s peak follows the switch.

The switches are read back from each framework on this CPU machine (a cuda adapter needs no GPU
to set and read them); their effect on a GPU is checked by benchmarks/gpu_check.sh (PyTorch).
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from duel.host.tables import peaks

PROBE = r"""
import json
from duel.cell.adapters import load_adapter
Adapter = load_adapter(%(framework)r)
def seen(adapter):
    return {"flags": adapter.tf32_flags(), "state": adapter.tf32_state(),
            "check": adapter.check_precision()}
report = {"default": seen(Adapter("eager", "cuda", "fp32", 1))}
report["on"] = seen(Adapter("eager", "cuda", "fp32", 1, tf32=True))
report["off"] = seen(Adapter("eager", "cuda", "fp32", 1, tf32=False))
cpu = Adapter("eager", "cpu", "fp32", 1, tf32=True)
report["cpu"] = dict(seen(cpu), column=cpu.environment()["tf32"])
print(json.dumps(report))
"""
ENVIRONMENT = {"pytorch": {"USE_TF": "0"}, "tensorflow": {"USE_TORCH": "0"}}


def probe(framework):
    environment = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3",
                       TF_USE_LEGACY_KERAS="1", **ENVIRONMENT[framework])
    result = subprocess.run([sys.executable, "-c", PROBE % {"framework": framework}],
                            capture_output=True, text=True, env=environment, cwd=REPO,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.framework
@pytest.mark.parametrize("framework", ["pytorch", "tensorflow"])
def test_the_switches_are_set_and_read_back_from_the_framework(framework):
    report = probe(framework)
    names = {"pytorch": {"torch.backends.cuda.matmul.allow_tf32",
                         "torch.backends.cudnn.allow_tf32"},
             "tensorflow": {"tf.config.experimental.tensor_float_32_execution_enabled"}}
    for case, value in (("default", False), ("on", True), ("off", False)):
        assert set(report[case]["flags"]) == names[framework]
        assert set(report[case]["flags"].values()) == {value}, (case, report[case])
    # strict fp32 unless asked (TensorFlow's own default would be TF32 on)
    assert report["default"]["state"] == report["off"]["state"] == "off"
    assert report["on"]["state"] == "on" and report["on"]["check"] == "tf32"
    assert report["off"]["check"] == "fp32"
    # on a CPU the switch is set but means nothing: the column says n/a
    assert report["cpu"]["flags"] and report["cpu"]["column"] == "n/a"
    assert report["cpu"]["check"] == "fp32"


@pytest.mark.unit
def test_the_peak_follows_the_switch():
    row = {"device": "cuda", "device_name": "NVIDIA A100-SXM4-80GB", "precision": "fp32"}
    assert peaks.peak_gflops(dict(row, tf32="off"))[0] == 19500.0
    peak, source = peaks.peak_gflops(dict(row, tf32="on"))
    assert peak == 156000.0 and "TF32" in source
    assert peaks.peak_gflops(dict(row, tf32="on", device_name="NVIDIA H100 PCIe"))[0] == 378000.0
    # a GPU without TF32 units runs fp32 either way; reduced precision ignores the switch
    assert peaks.peak_gflops(dict(row, tf32="on", device_name="Tesla V100-SXM2-16GB"))[0] \
        == 15700.0
    assert peaks.peak_gflops(dict(row, tf32="on", precision="bf16"))[0] == 312000.0
