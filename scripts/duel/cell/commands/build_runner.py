"""Build one deployment runner (cpp/) with CMake against an era's own installed wheel.

The era's interpreter is asked where its wheel keeps what a C++ program needs (libtorch: the
CMake config under ``torch.utils.cmake_prefix_path``; TensorFlow: the C API headers and the
shared objects in the package folder), then CMake and the compiler build ``cpp/`` in a
folder beside the output, and the runner is moved into place, then the record ``build.json`` is written last. The
compiler's messages go to stderr, the job's log. A build that fails, or that the era's wheel
cannot support, still writes its record (status error or skipped, with the reason): the cells
then report every point with that status instead of the whole run stopping. Run by the era's
own interpreter (Python 3.6 and up).

    python -m duel.cell.commands.build_runner --runtime libtorch \\
        --record .runners/current-cpu/libtorch-0123456789ab/build.json
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))
CPP = os.path.join(CHECKOUT, "cpp")  # the runners' sources
RUNNER = "duel-runner"

from duel.cell import files  # noqa: E402

# Run by the era's interpreter (any Python from 3.6): where the wheel keeps what CMake needs.
PROBES = {
    "libtorch": """
import json, os, torch
prefix = getattr(getattr(torch, "utils", None), "cmake_prefix_path", None)
print(json.dumps({"version": torch.__version__, "root": os.path.dirname(torch.__file__),
                  "cxx11_abi": int(torch._C._GLIBCXX_USE_CXX11_ABI),
                  "prefix": prefix or os.path.join(os.path.dirname(torch.__file__), "share", "cmake")}))
""",
    "tensorflow": """
import json, tensorflow as tf
print(json.dumps({"version": tf.__version__, "include": tf.sysconfig.get_include(),
                  "lib": tf.sysconfig.get_lib()}))
""",
}


class BuildError(RuntimeError):
    """The runner could not be built (its cells' rows become errors with this message)."""


class Unavailable(BuildError):
    """The era's wheel cannot give a Python-free runner (its cells' rows become skipped)."""


def probe(python, runtime):
    """What the era's wheel offers: version and paths (runs the era's interpreter)."""
    environment = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([python, "-c", PROBES[runtime]], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, env=environment)
    if result.returncode != 0:
        raise BuildError("%s cannot report its %s wheel's paths:\n%s"
                         % (python, runtime, result.stderr[-3000:]))
    return json.loads(result.stdout.strip().splitlines()[-1])


def tensorflow_libraries(lib):
    """The shared objects that export the C API, in the wheel's folder ``lib``.

    Today's wheels ship ``libtensorflow_cc.so.2`` and ``libtensorflow_framework.so.2``;
    TensorFlow 2.0's wheel had only the framework library and the Python extension
    ``_pywrap_tensorflow_internal.so``, whose C API needs a Python runtime to link against.
    """
    framework = sorted(glob.glob(os.path.join(lib, "libtensorflow_framework.so.*")))
    cc = sorted(glob.glob(os.path.join(lib, "libtensorflow_cc.so.*")))
    if not framework:
        raise BuildError("no libtensorflow_framework.so.* in %s" % lib)
    if not cc:
        raise Unavailable(
            "TensorFlow's wheel in this era has no libtensorflow_cc.so (in %s): its C API "
            "(TF_LoadSessionFromSavedModel) is exported only by the Python extension "
            "_pywrap_tensorflow_internal.so, which leaves the Python C API's symbols undefined, "
            "so a runner linking it would carry libpython: not a Python-free runtime" % lib)
    return [cc[0], framework[0]]


def cmake_arguments(runtime, found):
    arguments = ["-DDUEL_RUNTIME=%s" % runtime, "-DDUEL_RUNTIME_VERSION=%s" % found["version"]]
    if runtime == "libtorch" and int(found["version"].split(".")[0]) < 2:
        # torch 1.x wheels (2019's are CUDA builds) have a CMake config that demands the CUDA
        # toolkit even for a CPU program: use the wheel's headers and libraries directly.
        return arguments + ["-DDUEL_TORCH_ROOT=%s" % found["root"],
                            "-DDUEL_TORCH_CXX11_ABI=%d" % found["cxx11_abi"]]
    if runtime == "libtorch":
        return arguments + ["-DCMAKE_PREFIX_PATH=%s" % found["prefix"]]
    return arguments + ["-DTF_INCLUDE_DIR=%s" % found["include"],
                        "-DTF_LIBRARIES=%s" % ";".join(tensorflow_libraries(found["lib"]))]


def run(command, log):
    log.write("$ %s\n" % " ".join(command))
    log.flush()
    result = subprocess.run(command, stdout=log, stderr=log)
    if result.returncode != 0:
        raise BuildError("%s failed (exit %d)"
                         % (os.path.basename(command[0]), result.returncode))


def build(python, runtime, folder, log=sys.stderr):
    """Build the ``runtime`` runner against ``python``'s wheel into ``folder``/duel-runner;
    returns what was found (the wheel's version and paths)."""
    found = probe(python, runtime)
    build_dir = os.path.join(folder, "build")
    if os.path.isdir(build_dir):
        shutil.rmtree(build_dir)
    os.makedirs(build_dir)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run(["cmake", "-S", CPP, "-B", build_dir] + generator + cmake_arguments(runtime, found),
        log)
    run(["cmake", "--build", build_dir], log)
    runner = os.path.join(folder, RUNNER)
    with files.atomic_path(runner) as partial:
        shutil.copy2(os.path.join(build_dir, RUNNER), partial)
    shutil.rmtree(build_dir)
    return found


def build_record(python, runtime, record_path, log_name, log=sys.stderr):
    """Build, then write the record ``record_path`` (build.json) last, atomically: status ok
    (with the runner's path), skipped (the era cannot have this runner, and why) or error
    (the build failed; the compiler's messages are in the job's log ``log_name``)."""
    started = time.time()
    folder = os.path.dirname(os.path.abspath(record_path))
    if not os.path.isdir(folder):
        os.makedirs(folder)
    record = {"runtime": runtime, "python": python}
    try:
        found = build(python, runtime, folder, log)
        record.update(status="ok", runner=RUNNER, version=found["version"], paths=found)
    except Unavailable as error:
        record.update(status="skipped", message=str(error))
    except (BuildError, OSError) as error:
        record.update(status="error", message="the %s runner did not build: %s (see %s)"
                      % (runtime, error, log_name))
    record["build_s"] = round(time.time() - started, 1)
    files.write_json(record_path, record)
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the era's interpreter")
    parser.add_argument("--runtime", required=True, choices=sorted(PROBES))
    parser.add_argument("--record", required=True,
                        help="the build record to write (build.json); the runner goes beside it")
    parser.add_argument("--log-name", default="this job's log",
                        help="where the compiler's messages end up (named in an error record)")
    args = parser.parse_args(argv)
    record = build_record(args.python, args.runtime, args.record, args.log_name)
    sys.stderr.write("%s runner: %s in %.1f s %s\n" % (args.runtime, record["status"],
                                                       record["build_s"],
                                                       record.get("message", "")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
