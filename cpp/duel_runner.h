// What both deployment runners share: arguments, the duel timing loop, the result file.
//
// A runner is one process per point: it loads an exported artifact (TorchScript file or
// SavedModel) with its framework's own C/C++ runtime, times one forward pass per sample with
// the same stopping rule and settings as scripts/duel/cell/timing.py (time_duel), and writes
// a JSON result (raw samples, load time, its own peak RSS) plus the final hidden state of one
// more call, for the reference check in the cell. No Python interpreter runs in this process.
//
// The stopping rule (timing.py, time_duel; tests/features/test_deployment.py holds the two in
// step):
//   barrier; first call timed apart (first_call_ms); max(1, warmup_calls) - 1 more untimed
//   calls (at least one warm-up: the first call is never a sample); barrier; then one call per sample, a barrier before each clock read, until
//   (n >= min_samples and elapsed >= min_time_s) or n >= max_samples or elapsed >= max_time_s.
#ifndef DUEL_RUNNER_H
#define DUEL_RUNNER_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace duel {

// steady_clock is CLOCK_MONOTONIC on Linux, the clock of Python's time.monotonic(): the cell
// passes its reading just before it starts this process (--launched-at), so that load_ms runs
// from process start (exec, dynamic linking of the runtime included) to the first output.
inline double monotonic_s() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Settings {
  long warmup_calls = 3;
  long min_samples = 10;
  double min_time_s = 1.0;
  long max_samples = 1000;
  double max_time_s = 60.0;
};

struct Measurement {
  std::vector<double> samples_ms;
  bool has_first_call = false;
  double first_call_ms = 0.0;
  double first_output_at = 0.0;  // monotonic seconds at the end of the first call
};

// The duel method, exactly as timing.time_duel: see the header comment.
inline Measurement time_duel(const std::function<void()>& call,
                             const std::function<void()>& synchronise,
                             const Settings& settings) {
  Measurement result;
  auto clock = monotonic_s;
  // At least one warm-up call whatever warmup_calls says: the first call is never a sample.
  long warmup_calls = settings.warmup_calls > 1 ? settings.warmup_calls : 1;
  synchronise();
  double before_first = clock();
  call();
  synchronise();
  double after_first = clock();
  result.has_first_call = true;
  result.first_call_ms = (after_first - before_first) * 1000.0;
  result.first_output_at = after_first;
  for (long i = 0; i < warmup_calls - 1; ++i) call();
  synchronise();
  double started = clock();
  while (true) {
    double before = clock();
    call();
    synchronise();
    double after = clock();
    if (result.first_output_at == 0.0) result.first_output_at = after;
    result.samples_ms.push_back((after - before) * 1000.0);
    double elapsed = after - started;
    long n = static_cast<long>(result.samples_ms.size());
    bool enough = n >= settings.min_samples && elapsed >= settings.min_time_s;
    if (enough || n >= settings.max_samples || elapsed >= settings.max_time_s) break;
  }
  return result;
}

// --name value pairs (every option takes a value).
class Arguments {
 public:
  Arguments(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string key = argv[i];
      if (key.rfind("--", 0) != 0 || i + 1 >= argc)
        throw std::runtime_error("bad argument " + key + " (expected --name value)");
      values_[key.substr(2)] = argv[++i];
    }
  }
  bool has(const std::string& key) const { return values_.count(key) > 0; }
  std::string text(const std::string& key, const std::string& fallback = "") const {
    auto found = values_.find(key);
    if (found != values_.end()) return found->second;
    if (fallback.empty()) throw std::runtime_error("missing argument --" + key);
    return fallback;
  }
  long integer(const std::string& key, long fallback) const {
    return has(key) ? std::stol(text(key)) : fallback;
  }
  double number(const std::string& key, double fallback) const {
    return has(key) ? std::stod(text(key)) : fallback;
  }
  Settings settings() const {
    Settings settings;
    settings.warmup_calls = integer("warmup-calls", settings.warmup_calls);
    settings.min_samples = integer("min-samples", settings.min_samples);
    settings.min_time_s = number("min-time-s", settings.min_time_s);
    settings.max_samples = integer("max-samples", settings.max_samples);
    settings.max_time_s = number("max-time-s", settings.max_time_s);
    return settings;
  }

 private:
  std::map<std::string, std::string> values_;
};

// Token ids: batch x length int64 values, little-endian, row-major (numpy's tofile).
inline std::vector<int64_t> read_token_ids(const std::string& path, long batch, long length) {
  std::vector<int64_t> ids(static_cast<size_t>(batch * length));
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot open input " + path);
  file.read(reinterpret_cast<char*>(ids.data()), ids.size() * sizeof(int64_t));
  if (file.gcount() != static_cast<std::streamsize>(ids.size() * sizeof(int64_t)))
    throw std::runtime_error("input " + path + " holds fewer than batch x length ids");
  return ids;
}

inline void write_floats(const std::string& path, const float* values, size_t count) {
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(values), count * sizeof(float));
  if (!file) throw std::runtime_error("cannot write " + path);
}

// The kernel's high-water mark of this process's resident set (VmHWM), MiB: the runner's
// own peak over its whole life (load, warm-up, timing, the output call).
inline double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1.0;
}

inline std::string quoted(const std::string& text) {
  std::ostringstream out;
  out << '"';
  for (char c : text) {
    if (c == '"' || c == '\\') out << '\\' << c;
    else if (c == '\n') out << "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) out << ' ';
    else out << c;
  }
  out << '"';
  return out.str();
}

struct Result {
  Measurement measurement;
  Settings settings;
  std::string runtime, runtime_version, device;
  long threads = 0;
  double launched_at = 0.0, artifact_load_ms = 0.0;
  std::vector<long> output_shape;
};

inline void write_result(const std::string& path, const Result& result) {
  std::ostringstream out;
  out.precision(17);
  out << "{\"samples_ms\": [";
  const auto& samples = result.measurement.samples_ms;
  for (size_t i = 0; i < samples.size(); ++i) out << (i ? ", " : "") << samples[i];
  out << "], \"first_call_ms\": ";
  if (result.measurement.has_first_call) out << result.measurement.first_call_ms;
  else out << "null";
  out << ", \"warmup_calls\": " << (result.settings.warmup_calls > 1 ? result.settings.warmup_calls : 1);
  out << ", \"load_ms\": ";
  if (result.launched_at > 0) out << (result.measurement.first_output_at - result.launched_at) * 1000.0;
  else out << "null";
  out << ", \"artifact_load_ms\": " << result.artifact_load_ms;
  out << ", \"peak_rss_mib\": " << peak_rss_mib();
  out << ", \"runtime\": " << quoted(result.runtime);
  out << ", \"runtime_version\": " << quoted(result.runtime_version);
  out << ", \"device\": " << quoted(result.device);
  out << ", \"threads\": " << result.threads;
  out << ", \"output_shape\": [";
  for (size_t i = 0; i < result.output_shape.size(); ++i)
    out << (i ? ", " : "") << result.output_shape[i];
  out << "]}\n";
  std::string partial = path + ".partial";
  {
    std::ofstream file(partial);
    file << out.str();
    if (!file) throw std::runtime_error("cannot write " + partial);
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + partial + " to " + path);
}

// A call of known duration (for the test that holds this loop and timing.py in step): sleeps
// sleep_ms, like the Python test's time.sleep call.
inline std::function<void()> sleep_call(double sleep_ms) {
  return [sleep_ms]() {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(sleep_ms));
  };
}

// The runner's main: --sleep-ms (the timing test) or the runtime's own model call.
// ``run_model`` loads the artifact and fills in the result; errors go to stderr, exit code 1.
inline int main_with(int argc, char** argv, const std::string& runtime,
                     const std::string& runtime_version,
                     const std::function<void(const Arguments&, Result&)>& run_model) {
  try {
    if (argc == 2 && std::string(argv[1]) == "--version") {
      std::cout << runtime << " " << runtime_version << std::endl;
      return 0;
    }
    Arguments arguments(argc, argv);
    Result result;
    result.settings = arguments.settings();
    result.runtime = runtime;
    result.runtime_version = runtime_version;
    result.device = arguments.text("device", "cpu");
    result.threads = arguments.integer("threads", 1);
    result.launched_at = arguments.number("launched-at", 0.0);
    if (arguments.has("sleep-ms")) {
      result.measurement = time_duel(sleep_call(arguments.number("sleep-ms", 0.0)),
                                     []() {}, result.settings);
    } else {
      run_model(arguments, result);
    }
    write_result(arguments.text("result"), result);
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "duel runner (" << runtime << " " << runtime_version << ") failed: "
              << error.what() << std::endl;
    return 1;
  }
}

}  // namespace duel

#endif  // DUEL_RUNNER_H
