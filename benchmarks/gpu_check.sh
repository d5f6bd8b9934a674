#!/usr/bin/env bash
# The GPU check of the CUDA path (issue 4), for a machine with an NVIDIA GPU, torch and
# transformers (no TensorFlow needed): BERT-base, PyTorch eager / TorchScript / torch.compile,
# batch 1 and 8, lengths 128 and 512, methods duel (synchronised) and hf2019 (no sync, as 2019),
# one shard per mode under ${OUT:-gpu-check}/. Compare duel and hf2019 medians to see what
# timing without a device barrier does to GPU numbers. Run from the checkout:
#   bash benchmarks/gpu_check.sh            # or OUT=/some/dir bash benchmarks/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check}"
mkdir -p "$out"
python="${PYTHON:-python3}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/nvidia-smi.csv"
for mode in eager torchscript compile; do
  "$python" scripts/run_cell.py --framework pytorch --mode "$mode" --device cuda \
    --model-config config/models/bert-base-cased.json --batch-sizes 1,8 \
    --sequence-lengths 128,512 --methods duel,hf2019 --output "$out/pytorch-$mode.parquet" \
    2>&1 | tee "$out/pytorch-$mode.log" | grep -E "duel|hf2019|wrote"
done
