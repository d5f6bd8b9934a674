"""Deployment modes in C/C++: the exported artifact run by its framework's own runtime.

Each point starts the era's runner (cpp/, built by duel/cell/commands/build_runner.py) as its own
process: it loads the point's artifact, sets the cell's thread count (intra- and inter-op),
times the duel method with the same settings (cpp/duel_runner.h keeps timing.py's stopping
rule) and writes its raw samples, its load time and its peak RSS to a JSON file, and the final
hidden state of one more call to a binary file, which the sweep checks against the reference
like any other mode's output. No Python interpreter runs in the timed process; this cell's
process (which never imports the framework) only waits for it.

Columns from the runner: ``peak_host_rss_mb`` is the runner process's own VmHWM at its end (its
whole life: load, warm-up, samples, output; the method column says so), ``load_ms`` the time
from just before this process started the runner to the runner's first output (CLOCK_MONOTONIC
on both sides), ``artifact_load_ms`` the load call alone. A runner that fails makes the point an
``error`` with the runtime's own message (the first line it printed as its failure).
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np

from .. import timing
from ..modes import DEPLOYED_CPP, mode_names
from .base import Adapter, no_gpu_name
from .deployed import MODES, Deployment

PEAK_METHOD = "runner process VmHWM (its whole life: load, warm-up, samples, output)"
FAILURE_MARK = "duel runner ("


def runner_version(runner):
    """('libtorch', '2.13.0+cpu') from the runner's --version."""
    output = subprocess.check_output([runner, "--version"], stderr=subprocess.DEVNULL,
                                     universal_newlines=True)
    words = output.strip().splitlines()[-1].split()
    return words[0], words[-1]


def failure_message(stderr, returncode):
    """The runtime's own message from a failed runner's stderr (its first line only)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(FAILURE_MARK):
            return line.split(" failed: ", 1)[-1]
    tail = lines[-1] if lines else "no message"
    return "the runner exited with status %d: %s" % (returncode, tail)


class CppRunnerAdapter(Adapter):
    """Runs each point in the framework's C/C++ runner; the sweep's timing core is not used
    (``times_itself``), the same stopping rule runs in the runner."""

    modes = mode_names(kinds=(DEPLOYED_CPP,))
    times_itself = True

    def __init__(self, framework, mode, device, precision, threads, task="inference",
                 tf32=False):
        self.framework = framework
        super(CppRunnerAdapter, self).__init__(mode, device, precision, threads, task, tf32)
        if MODES[mode].framework != framework:
            raise ValueError("mode %s belongs to %s, not %s"
                             % (mode, MODES[mode].framework, framework))
        self.deployment = Deployment()
        self.runtime = (None, None)
        self.build_status = (None, None)
        self.result = {}
        self._output = None
        self._inputs = None

    def attach(self, artifact_dir, runner=None):
        """``runner``: the build record (build.json, duel/cell/commands/build_runner.py) of this era's
        runner; a runner that could not be built makes every point skipped or an error."""
        self.deployment.attach(artifact_dir)
        if not runner or not os.path.isfile(runner):
            raise ValueError("mode %s needs its runner's build record (--runner-build), got %r"
                             % (self.mode, runner))
        with open(runner) as handle:
            record = json.load(handle)
        self.build_status = (record["status"], record.get("message"))
        if record["status"] == "ok":
            self.deployment.runner = os.path.join(os.path.dirname(os.path.abspath(runner)),
                                                  record["runner"])
            self.runtime = runner_version(self.deployment.runner)

    def environment(self):
        return {
            "framework_version": self.runtime[1] or self.deployment.manifest.get(
                "framework_version"),
            "transformers_version": self.deployment.manifest.get("transformers_version"),
            "cuda": self.deployment.manifest.get("cuda"),
            "cudnn": None,
            "device_name": self.deployment.manifest.get("device_name") or no_gpu_name(
                self.device),
        }

    def mode_unsupported(self, spec):
        if self.build_status[0] == "skipped":
            return self.build_status[1]
        return self.deployment.deployment_unsupported(self.task, self.precision)

    def point_unsupported(self, point):
        if point.method != "duel":
            return "the C/C++ runners time the duel method only (timeit is a Python timeit loop)"
        return None

    def build(self, spec, seed, weights_dir=None):
        if self.build_status[0] != "ok":
            raise RuntimeError(self.build_status[1])
        self.fresh = True  # the artifact holds the weights; the runner loads it per point

    def inputs(self, token_ids):
        return np.ascontiguousarray(token_ids, dtype=np.int64)

    def call_for(self, method, inputs):
        self._inputs = inputs
        return lambda: self._output

    def to_numpy(self, tensor):
        return tensor

    def last_hidden_state(self, outputs):
        return outputs

    def _command(self, artifact, folder, batch_size, seq_len, settings):
        command = [self.deployment.runner, "--artifact", artifact,
                   "--input", os.path.join(folder, "ids.bin"),
                   "--batch", str(batch_size), "--length", str(seq_len),
                   "--threads", str(self.threads), "--device", self.device,
                   "--result", os.path.join(folder, "result.json"),
                   "--output", os.path.join(folder, "hidden.bin"),
                   "--warmup-calls", str(settings.warmup_calls),
                   "--min-samples", str(settings.min_samples),
                   "--min-time-s", repr(float(settings.min_time_s)),
                   "--max-samples", str(settings.max_samples),
                   "--max-time-s", repr(float(settings.max_time_s))]
        signature = self.deployment.manifest.get("signature") or {}
        if signature:
            command += ["--input-name", signature["input"], "--output-name", signature["output"]]
        return command

    def time_point(self, inputs, settings):
        """Run the point in the runner; returns the Measurement (timing.py's shape)."""
        batch_size, seq_len = inputs.shape
        artifact = self.deployment.artifact(batch_size, seq_len)
        folder = tempfile.mkdtemp(prefix="duel-runner-")
        try:
            inputs.tofile(os.path.join(folder, "ids.bin"))
            command = self._command(artifact, folder, batch_size, seq_len, settings)
            command += ["--launched-at", repr(time.monotonic())]
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       universal_newlines=True)
            _, stderr = process.communicate()
            if process.returncode != 0:
                raise RuntimeError(failure_message(stderr, process.returncode))
            with open(os.path.join(folder, "result.json")) as handle:
                self.result = json.load(handle)
            hidden = np.fromfile(os.path.join(folder, "hidden.bin"), dtype=np.float32)
            self._output = hidden.reshape(self.result["output_shape"])
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        samples = self.result["samples_ms"]
        return timing.Measurement(samples, float(np.mean(samples)), self.result["warmup_calls"],
                                  None, None, self.result["first_call_ms"])

    def point_columns(self, columns):
        values = self.deployment.artifact_columns()
        values.update(
            load_ms=self.result.get("load_ms"),
            artifact_load_ms=self.result.get("artifact_load_ms"),
            runtime=self.result.get("runtime"),
            runtime_version=self.result.get("runtime_version"),
            peak_host_rss_mb=self.result.get("peak_rss_mib"),
            peak_host_rss_method=PEAK_METHOD,
        )
        return values

    def release_point(self):
        self._output = None
        self.result = {}
        super(CppRunnerAdapter, self).release_point()


def adapter_class(framework):
    def make(mode, device, precision, threads, task="inference", tf32=False):
        return CppRunnerAdapter(framework, mode, device, precision, threads, task, tf32)
    return make
