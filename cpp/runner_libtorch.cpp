// Duel's libtorch runner: a TorchScript file (torch.jit.trace of the model at one input shape,
// saved by scripts/duel/cell/export.py) loaded with torch::jit::load and timed in C++.
//
//   duel-runner-libtorch --artifact model.pt --input ids.bin --batch 1 --length 8
//       --threads 2 --device cpu --result result.json --output hidden.bin
//       [--warmup-calls 3 --min-samples 10 --min-time-s 1 --max-samples 1000 --max-time-s 60]
//       [--launched-at <monotonic s>]
//
// Threads: intra-op and inter-op both set to --threads (as the Python cells set torch's
// intra-op count and OMP_NUM_THREADS). Calls run with autograd off, as the duel method's
// torch.no_grad(). The traced graph was recorded in eval mode (no dropout in it). CUDA: the module and input go to the first GPU, and
// torch::cuda::synchronize() is the barrier before every clock read.
#include <torch/script.h>

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#ifdef DUEL_TORCH_CUDA_SYNC  // torch::cuda::synchronize (CMakeLists.txt: libtorch 1.10 and up)
#include <torch/cuda.h>
#endif

#include "duel_runner.h"

#ifndef DUEL_RUNTIME_VERSION
#define DUEL_RUNTIME_VERSION "unknown"
#endif

namespace {

torch::Tensor last_hidden_state(const c10::IValue& output) {
  if (output.isTensor()) return output.toTensor();
  if (output.isTuple()) return output.toTuple()->elements()[0].toTensor();
  throw std::runtime_error("the module's output is neither a tensor nor a tuple of tensors");
}

void run_model(const duel::Arguments& arguments, duel::Result& result) {
  at::set_num_threads(static_cast<int>(result.threads));
  at::set_num_interop_threads(static_cast<int>(result.threads));
  bool cuda = result.device == "cuda";
  std::function<void()> synchronise = []() {};
  if (cuda) {
#ifdef DUEL_TORCH_CUDA_SYNC
    if (!torch::cuda::is_available())
      throw std::runtime_error("device cuda asked for, but libtorch sees no CUDA device");
    synchronise = []() { torch::cuda::synchronize(); };
#else
    throw std::runtime_error("this libtorch has no torch::cuda::synchronize (1.10 and up)");
#endif
  } else if (result.device != "cpu") {
    throw std::runtime_error("unknown device " + result.device);
  }
  torch::Device device(cuda ? torch::kCUDA : torch::kCPU);
  long batch = arguments.integer("batch", 1), length = arguments.integer("length", 1);
  std::vector<int64_t> ids = duel::read_token_ids(arguments.text("input"), batch, length);

  double before = duel::monotonic_s();
  auto module = torch::jit::load(arguments.text("artifact"), device);
  result.artifact_load_ms = (duel::monotonic_s() - before) * 1000.0;

  at::AutoGradMode no_grad(false);  // torch.no_grad(), in every libtorch since 1.0
  torch::Tensor input =
      torch::from_blob(ids.data(), {batch, length}, torch::kLong).clone().to(device);
  std::vector<torch::jit::IValue> inputs{input};
  auto call = [&]() { module.forward(inputs); };
  result.measurement = duel::time_duel(call, synchronise, result.settings);

  torch::Tensor hidden = last_hidden_state(module.forward(inputs));
  synchronise();
  hidden = hidden.to(torch::kCPU).to(torch::kFloat).contiguous();
  for (auto size : hidden.sizes()) result.output_shape.push_back(static_cast<long>(size));
  duel::write_floats(arguments.text("output"), hidden.data_ptr<float>(),
                     static_cast<size_t>(hidden.numel()));
}

}  // namespace

int main(int argc, char** argv) {
  return duel::main_with(argc, argv, "libtorch", DUEL_RUNTIME_VERSION, run_model);
}
