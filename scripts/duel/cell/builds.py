"""What a framework was built with, as it reports it: one shard column, ``framework_build``.

Across eras the builds differ (CPU features, oneDNN/MKL, compilers), so a speed-up between two
eras may be a build switch rather than a code change; every shard records the build as a JSON
object of what the framework says of itself, each fact absent where that release cannot say it.
Read by in-cell code in every era: Python 3.6, standard library only; every probe guarded.
"""
import json
import os
import re

# Lines of torch.__config__.show() worth keeping (the rest are paths and versions of tools).
TORCH_SETTINGS = ("CXX_FLAGS", "BLAS_INFO", "LAPACK_INFO", "USE_MKL", "USE_MKLDNN", "USE_OPENMP",
                  "USE_CUDA", "USE_NNPACK", "USE_XNNPACK", "TORCH_VERSION", "BUILD_TYPE")


def _probe(facts, name, read):
    try:
        value = read()
    except Exception:  # an older release without the probe: the fact is absent
        return
    if value is not None:
        facts[name] = value


def _settings(text, names):
    found = {}
    for name in names:
        match = re.search(r"\b%s=([^,\n]*)" % re.escape(name), text)
        if match:
            found[name] = match.group(1).strip()
    return found


def pytorch(torch):
    """torch's build: CPU capability, MKL, oneDNN (mkldnn), OpenMP, and its build settings."""
    facts = {}
    _probe(facts, "cpu_capability", lambda: torch.backends.cpu.get_cpu_capability())
    _probe(facts, "mkl", lambda: bool(torch.backends.mkl.is_available()))
    _probe(facts, "onednn", lambda: bool(torch.backends.mkldnn.is_available()))
    _probe(facts, "openmp", lambda: bool(torch.backends.openmp.is_available()))
    config = {}
    _probe(config, "text", lambda: torch.__config__.show())
    if config:
        text = config["text"]
        capability = re.search(r"CPU capability usage: (\S+)", text)
        if capability and "cpu_capability" not in facts:
            facts["cpu_capability"] = capability.group(1)
        compiler = re.search(r"(GCC|clang|Clang) [^\n]*", text)
        if compiler:
            facts["compiler"] = compiler.group(0).strip()
        facts["settings"] = _settings(text, TORCH_SETTINGS)
    return json.dumps(facts, sort_keys=True)


def tensorflow(tf):
    """TensorFlow's build: its build info, compile flags, and whether oneDNN is built in."""
    facts = {}
    _probe(facts, "build_info", lambda: dict((key, str(value)) for key, value in
                                             tf.sysconfig.get_build_info().items()))
    _probe(facts, "compile_flags", lambda: " ".join(tf.sysconfig.get_compile_flags()))
    _probe(facts, "onednn", _tensorflow_onednn)
    # TensorFlow 2.9+ runs oneDNN's kernels on x86 unless this says 0; older ones only if 1.
    facts["TF_ENABLE_ONEDNN_OPTS"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    return json.dumps(facts, sort_keys=True)


def _tensorflow_onednn():
    """Whether this TensorFlow was built with oneDNN (MKL): the probe moved between releases."""
    try:
        from tensorflow.python.util import _pywrap_util_port
        return bool(_pywrap_util_port.IsMklEnabled())
    except ImportError:
        from tensorflow.python import pywrap_tensorflow
        return bool(pywrap_tensorflow.IsMklEnabled())
