// Duel's TensorFlow runner: a SavedModel (serving signature, input ids of shape [None, None])
// loaded with the TensorFlow C API (TF_LoadSessionFromSavedModel) and timed in C++.
//
//   duel-runner-tensorflow --artifact saved_model_dir --input ids.bin --batch 1 --length 8
//       --input-name serving_default_input_ids:0 --output-name StatefulPartitionedCall:0
//       --threads 2 --device cpu --result result.json --output hidden.bin [timing settings]
//
// Threads: the session's ConfigProto sets intra_op_parallelism_threads and
// inter_op_parallelism_threads to --threads, as the Python cells set both. TF_SessionRun
// returns its outputs on the host, so each call already waits for the device: the barrier
// of the duel method is part of the call (on a GPU too; a cpu cell hides the GPUs through
// CUDA_VISIBLE_DEVICES, set by the cell).
#include <tensorflow/c/c_api.h>

#include <memory>

#include "duel_runner.h"

#ifndef DUEL_RUNTIME_VERSION
#define DUEL_RUNTIME_VERSION ""
#endif

namespace {

void check(TF_Status* status, const std::string& what) {
  if (TF_GetCode(status) != TF_OK) throw std::runtime_error(what + ": " + TF_Message(status));
}

// ConfigProto { intra_op_parallelism_threads = 2; inter_op_parallelism_threads = 5; }, encoded
// by hand (varint fields) so that the runner needs no protobuf headers.
std::string thread_config(long threads) {
  std::string proto;
  for (int field : {2, 5}) {
    proto.push_back(static_cast<char>(field << 3));
    unsigned long value = static_cast<unsigned long>(threads);
    do {
      unsigned char byte = value & 0x7f;
      value >>= 7;
      proto.push_back(static_cast<char>(value ? byte | 0x80 : byte));
    } while (value);
  }
  return proto;
}

// "name:index" -> the graph's operation output.
TF_Output graph_output(TF_Graph* graph, const std::string& tensor_name) {
  size_t colon = tensor_name.rfind(':');
  std::string name = tensor_name.substr(0, colon);
  int index = colon == std::string::npos ? 0 : std::stoi(tensor_name.substr(colon + 1));
  TF_Operation* operation = TF_GraphOperationByName(graph, name.c_str());
  if (operation == nullptr)
    throw std::runtime_error("the SavedModel's graph has no operation " + name);
  return TF_Output{operation, index};
}

void run_model(const duel::Arguments& arguments, duel::Result& result) {
  if (result.device != "cpu" && result.device != "cuda")
    throw std::runtime_error("unknown device " + result.device);
  long batch = arguments.integer("batch", 1), length = arguments.integer("length", 1);
  std::vector<int64_t> ids = duel::read_token_ids(arguments.text("input"), batch, length);
  std::unique_ptr<TF_Status, decltype(&TF_DeleteStatus)> status(TF_NewStatus(), TF_DeleteStatus);
  std::unique_ptr<TF_SessionOptions, decltype(&TF_DeleteSessionOptions)> options(
      TF_NewSessionOptions(), TF_DeleteSessionOptions);
  std::string config = thread_config(result.threads);
  TF_SetConfig(options.get(), config.data(), config.size(), status.get());
  check(status.get(), "setting the session's threads");
  TF_Graph* graph = TF_NewGraph();
  const char* tags[] = {"serve"};

  double before = duel::monotonic_s();
  TF_Session* session = TF_LoadSessionFromSavedModel(
      options.get(), nullptr, arguments.text("artifact").c_str(), tags, 1, graph, nullptr,
      status.get());
  check(status.get(), "loading the SavedModel");
  result.artifact_load_ms = (duel::monotonic_s() - before) * 1000.0;

  TF_Output input = graph_output(graph, arguments.text("input-name"));
  TF_Output output = graph_output(graph, arguments.text("output-name"));
  int64_t dims[2] = {batch, length};
  TF_Tensor* input_tensor =
      TF_AllocateTensor(TF_INT32, dims, 2, static_cast<size_t>(batch * length) * sizeof(int32_t));
  int32_t* values = static_cast<int32_t*>(TF_TensorData(input_tensor));
  for (size_t i = 0; i < ids.size(); ++i) values[i] = static_cast<int32_t>(ids[i]);

  auto run = [&]() {
    TF_Tensor* output_tensor = nullptr;
    TF_SessionRun(session, nullptr, &input, &input_tensor, 1, &output, &output_tensor, 1,
                  nullptr, 0, nullptr, status.get());
    check(status.get(), "running the serving signature");
    return output_tensor;
  };
  result.measurement = duel::time_duel([&]() { TF_DeleteTensor(run()); }, []() {},
                                       result.settings);

  TF_Tensor* hidden = run();
  if (TF_TensorType(hidden) != TF_FLOAT)
    throw std::runtime_error("the serving signature's output is not float32");
  size_t count = 1;
  for (int i = 0; i < TF_NumDims(hidden); ++i) {
    result.output_shape.push_back(static_cast<long>(TF_Dim(hidden, i)));
    count *= static_cast<size_t>(TF_Dim(hidden, i));
  }
  duel::write_floats(arguments.text("output"), static_cast<const float*>(TF_TensorData(hidden)),
                     count);
  TF_DeleteTensor(hidden);
  TF_DeleteTensor(input_tensor);
  TF_CloseSession(session, status.get());
  TF_DeleteSession(session, status.get());
  TF_DeleteGraph(graph);
}

}  // namespace

int main(int argc, char** argv) {
  std::string version = DUEL_RUNTIME_VERSION;
  return duel::main_with(argc, argv, "tensorflow-c", version.empty() ? TF_Version() : version,
                         run_model);
}
