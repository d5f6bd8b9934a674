"""Framework adapters: PyTorch and TensorFlow behind the same small interface (see base.py).

Each adapter is imported only when its framework is asked for, so a PyTorch cell never imports
TensorFlow (and the reverse): imports cost seconds and inflate the measured memory.
"""
import importlib

ADAPTERS = {
    "pytorch": ("duel.cell.adapters.pytorch", "PyTorchAdapter"),
    "tensorflow": ("duel.cell.adapters.tensorflow", "TensorFlowAdapter"),
}


def load_adapter(framework, mode=None):
    """The adapter class of ``framework`` (imports that framework), or of its deployment
    ``mode`` (deployed.py: the Python loaders import the framework, the C/C++ runners do not)."""
    if framework not in ADAPTERS:
        raise ValueError(
            "unknown framework %r (known: %s)" % (framework, ", ".join(sorted(ADAPTERS)))
        )
    from . import deployed

    if deployed.is_deployed(mode):
        where = "deployed_cpp" if deployed.runs_in_cpp(mode) else "deployed_python"
        module = importlib.import_module("duel.cell.adapters." + where)
        return module.adapter_class(framework)
    module_name, class_name = ADAPTERS[framework]
    return getattr(importlib.import_module(module_name), class_name)
