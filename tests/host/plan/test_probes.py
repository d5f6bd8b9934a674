"""Devices are asked for while planning: a CUDA cell is planned, and refused where no GPU is."""
import pytest

from conftest import REPO
from duel.host.plan import config_keys, planner, probes


@pytest.mark.unit
def test_cuda_cells_are_planned_per_precision_and_need_a_gpu_to_run_here():
    config = {"eras": ["current"], "devices": ["cpu", "cuda"], "frameworks": ["pytorch"],
              "modes": {"pytorch": ["eager"]}, "precisions": ["fp32", "bf16"],
              "tasks": ["inference"], "models": ["gpt2"], "batch_sizes": [1],
              "sequence_lengths": [8], "method": "duel", "duel": {"max_samples": 10},
              "replicates": 1}
    probes.check_devices(config["devices"], has_gpu=lambda: True)
    cells = planner.plan_cells(config, REPO)
    assert [(cell.device, cell.precision) for cell in cells] == [
        ("cpu", "fp32"), ("cpu", "bf16"), ("cuda", "fp32"), ("cuda", "bf16")]
    assert planner.shard_path(cells[-1]) == \
        "results/shards/current/cuda/pytorch/eager/bf16/inference/gpt2/r1.parquet"
    with pytest.raises(config_keys.PlanError, match="no NVIDIA GPU"):
        probes.check_devices(config["devices"], has_gpu=lambda: False)
