"""The nominal peak FLOP/s of the hardware a cell ran on, where it can be known.

Achieved GFLOP/s means little without the ceiling beside it. The ceiling is nominal (what the
silicon could do if every unit were busy every cycle), never measured:
- CPU, fp32: threads x clock x FLOPs per cycle per core. FLOPs per cycle follow the vector
  extensions the cell recorded (``cpu_flags``), assuming two vector FMA units per core, as on
  x86 server cores since Haswell and Zen 2: AVX-512 64, AVX2 with FMA 32, AVX 16, SSE 8. The
  clock is ``cpu_max_mhz`` (cpufreq's maximum, else the MHz the kernel reports, which in a
  virtual machine is the nominal clock). Reduced precision on a CPU has no known ceiling here
  (it depends on AMX / AVX-512 BF16 units the kernels may or may not use): None.
- GPU: the data-sheet dense peak of known GPUs, fp32 without tensor cores, fp16/bf16 with them;
  fp32 with TF32 on (column ``tf32``) the dense TF32 tensor-core peak, where the GPU has TF32
  units (Ampere and newer; on older GPUs the switch changes nothing, so the fp32 peak stays).
"""
import pandas as pd

# FLOPs per cycle per core (fp32) for the widest vector extension present, with two FMA units.
CPU_FLOPS_PER_CYCLE = (("avx512f", 64), ("avx2+fma", 32), ("avx", 16))
SSE_FLOPS_PER_CYCLE = 8

# Dense data-sheet peaks, TFLOP/s: (name fragment, fp32, fp16, bf16); first match wins.
GPU_PEAK_TFLOPS = (
    ("H100 PCIe", 51.2, 756.0, 756.0),
    ("H100", 66.9, 989.4, 989.4),
    ("H200", 66.9, 989.4, 989.4),
    ("A100", 19.5, 312.0, 312.0),
    ("V100", 15.7, 125.0, None),
    ("T4", 8.1, 65.0, None),
    ("L4", 30.3, 121.0, 121.0),
)

# Dense TF32 tensor-core peaks, TFLOP/s (the data sheets' sparse figures halved); first match
# wins. GPUs missing here have no TF32 units.
GPU_TF32_PEAK_TFLOPS = (
    ("H100 PCIe", 378.0),
    ("H100", 494.7),
    ("H200", 494.7),
    ("A100", 156.0),
    ("L4", 60.0),
)


def cpu_flops_per_cycle(flags):
    """fp32 FLOPs per cycle per core for a ``cpu_flags`` string (see the module docstring)."""
    present = set((flags or "").split(","))
    if "avx2" in present and "fma" in present:
        present.add("avx2+fma")
    for flag, flops in CPU_FLOPS_PER_CYCLE:
        if flag in present:
            return flops
    return SSE_FLOPS_PER_CYCLE


def _value(row, key):
    """A row's value, None where missing (pandas' NA included)."""
    value = row.get(key)
    return None if value is None or pd.isna(value) else value


def peak_gflops(row):
    """(nominal peak GFLOP/s, how it was derived) for a row's hardware and precision, or
    (None, why not)."""
    precision = _value(row, "precision") or "fp32"
    flags, mhz, threads = _value(row, "cpu_flags"), _value(row, "cpu_max_mhz"), _value(row, "threads")
    if row["device"] == "cuda":
        name = _value(row, "device_name") or ""
        if precision == "fp32" and _value(row, "tf32") == "on":
            for fragment, peak in GPU_TF32_PEAK_TFLOPS:
                if fragment in name:
                    return peak * 1000.0, "%s data sheet, dense TF32" % fragment
        for fragment, *peaks in GPU_PEAK_TFLOPS:
            if fragment in name:
                peak = dict(zip(("fp32", "fp16", "bf16"), peaks))[precision]
                if peak is None:
                    return None, "%s has no %s units" % (fragment, precision)
                return peak * 1000.0, "%s data sheet, dense %s" % (fragment, precision)
        return None, "GPU %r not in the table of known peaks" % name
    if precision != "fp32":
        return None, "no known CPU ceiling for %s" % precision
    if mhz is None or threads is None:
        return None, "clock or threads not recorded"
    per_cycle = cpu_flops_per_cycle(flags)
    peak = float(threads) * float(mhz) / 1000.0 * per_cycle
    return peak, "%d threads x %.2f GHz x %d FLOP/cycle (%s, 2 FMA units assumed)" % (
        int(threads), float(mhz) / 1000.0, per_cycle, flags or "no AVX")
