"""Nominal peaks (tables/peaks.py): known GPUs' data sheet figures, a CPU's vector units."""
import pytest

from duel.host.tables import peaks


@pytest.mark.parametrize("name, precision, expected", [
    ("NVIDIA H200", "bf16", 989400.0),
    ("NVIDIA H100 PCIe", "fp32", 51200.0),
    ("Tesla V100-SXM2-16GB", "fp16", 125000.0),
    ("Tesla V100-SXM2-16GB", "bf16", None),
    ("Some Future GPU", "fp32", None),
])
@pytest.mark.unit
def test_gpu_peaks_come_from_the_data_sheet_table(name, precision, expected):
    peak, source = peaks.peak_gflops({"device": "cuda", "device_name": name,
                                      "precision": precision})
    assert peak == expected, source


@pytest.mark.unit
def test_cpu_peak_follows_the_widest_vector_unit():
    row = {"device": "cpu", "precision": "fp32", "threads": 4, "cpu_max_mhz": 2500.0}
    assert peaks.peak_gflops(dict(row, cpu_flags="avx512f,avx2,fma,avx"))[0] == 640.0
    assert peaks.peak_gflops(dict(row, cpu_flags="avx2,fma,avx"))[0] == 320.0
    assert peaks.peak_gflops(dict(row, cpu_flags="avx"))[0] == 160.0
    assert peaks.peak_gflops(dict(row, precision="bf16"))[0] is None
