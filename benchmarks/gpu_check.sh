#!/usr/bin/env bash
# The GPU checks, for a machine with an NVIDIA GPU, torch and transformers (no TensorFlow
# needed), one shard per cell under ${OUT:-gpu-check}/. Run from anywhere in the checkout:
#   bash benchmarks/gpu_check.sh              # both parts
#   bash benchmarks/gpu_check.sh tf32         # one part: modes or tf32
#   OUT=/some/dir PYTHON=/path/python bash benchmarks/gpu_check.sh
# - modes (the CUDA path): BERT-base, PyTorch eager / TorchScript / torch.compile,
#   batch 1 and 8, lengths 128 and 512, methods duel (synchronised) and timeit (no sync, as
#   2019). Compare duel medians and timeit means to see what timing without a device barrier does.
# - tf32: BERT-base fp32, batch 8, length 512, PyTorch eager with TF32 off and on,
#   checked against the PyTorch eager CPU reference on the same weights: with TF32 off the output
#   is within the fp32 tolerance, and the tf32 column and the GFLOP/s peak follow the switch.
# DEVICE=cpu rehearses the tf32 part without a GPU (its tf32 column is then n/a), and
# TF32_MODEL/TF32_BATCH/TF32_LENGTH shrink it, e.g. to tests/data/models/tiny-bert-16pos.json.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check}"
python="${PYTHON:-python3}"
device="${DEVICE:-cuda}"
# The in-cell commands import the package from the checkout (it may not be installed there).
export PYTHONPATH="$PWD/scripts${PYTHONPATH:+:$PYTHONPATH}"
parts="${*:-modes tf32}"
bert=config/models/bert-base-cased.json
mkdir -p "$out"
if [ "$device" = cuda ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
fi

modes() {
  for mode in eager torchscript compile; do
    "$python" -m duel.cell.commands.run_cell --framework pytorch --mode "$mode" --device "$device" \
      --model-config "$bert" --batch-sizes 1,8 \
      --sequence-lengths 128,512 --methods duel,timeit --output "$out/pytorch-$mode.parquet" \
      2>&1 | tee "$out/pytorch-$mode.log" | grep -E "duel|timeit|wrote"
  done
}

tf32() {
  local model="${TF32_MODEL:-$bert}" batch="${TF32_BATCH:-8}" length="${TF32_LENGTH:-512}"
  "$python" -m duel.cell.commands.make_reference --model-config "$model" --sequence-lengths "$length" \
    --output-dir "$out/reference" 2>&1 | tee "$out/reference.log" | tail -n 1
  for switch in off on; do
    "$python" -m duel.cell.commands.run_cell --framework pytorch --mode eager --device "$device" \
      --precision fp32 --tf32 "$switch" --model-config "$model" --batch-sizes "$batch" \
      --sequence-lengths "$length" --methods duel --reference-dir "$out/reference" \
      --output "$out/pytorch-tf32-$switch.parquet" \
      2>&1 | tee "$out/pytorch-tf32-$switch.log" | grep -E "duel|wrote"
  done
  "$python" - "$out" "$device" <<'PYTHON'
import os, sys
import pyarrow.parquet as pq
out, device = sys.argv[1], sys.argv[2]
rows = dict((switch, pq.read_table(os.path.join(out, "pytorch-tf32-%s.parquet" % switch))
             .to_pylist()[0]) for switch in ("off", "on"))
try:
    from duel.host.tables import peaks  # needs pandas
except ImportError as error:
    peaks = None
    print("peaks not checked: %s" % error)
failures = []
for switch, row in sorted(rows.items()):
    peak = peaks.peak_gflops(row) if peaks else (None, "not checked")
    print("tf32 %s: column %s, status %s, median %s ms, %s GFLOP/s, max |diff| %s "
          "(tolerance %s), peak %s GFLOP/s (%s) %s"
          % (switch, row["tf32"], row["status"], row["median"], row["achieved_gflops"],
             row["max_abs_diff"], row["diff_tolerance"], peak[0], peak[1], row["message"] or ""))
    expected = switch if device == "cuda" else "n/a"
    if row["tf32"] != expected:
        failures.append("tf32 %s: column %r, expected %r" % (switch, row["tf32"], expected))
    if row["status"] != "ok":
        failures.append("tf32 %s: status %s: %s" % (switch, row["status"], row["message"]))
    rows[switch]["peak"] = peak[0]
off = rows["off"]
if off["max_abs_diff"] is None or off["max_abs_diff"] > off["diff_tolerance"]:
    failures.append("tf32 off: output not within the fp32 tolerance")
if device == "cuda" and peaks is not None and "TF32" in peaks.peak_gflops(rows["on"])[1]:
    if not rows["on"]["peak"] > rows["off"]["peak"]:
        failures.append("the peak does not follow the switch")
if rows["on"]["median"] and rows["off"]["median"]:
    print("TF32 off / on median: %.3f" % (rows["off"]["median"] / rows["on"]["median"]))
print("\n".join(failures) or "tf32 check passed")
sys.exit(1 if failures else 0)
PYTHON
}

for part in $parts; do
  case "$part" in
    modes|tf32) "$part" ;;
    *) echo "unknown part $part (parts: modes, tf32)" >&2; exit 2 ;;
  esac
done
