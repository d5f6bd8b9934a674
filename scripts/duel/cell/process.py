"""What a cell's process sets up before a framework is imported, and its shared argument types.

One home for what every in-cell command (run_cell.py, make_reference.py, export_artifacts.py)
and the harness benchmark need before ``import torch`` or ``import tensorflow``: offline and
quiet, one framework per process, the thread count. Python 3.6-compatible, like all of duel/cell.
"""
import argparse
import os

from . import frameworks

# A process of both frameworks (the reference job) lets transformers load either.
BOTH = {"USE_TORCH": "AUTO", "USE_TF": "AUTO", "TF_USE_LEGACY_KERAS": "1"}
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def positive_ints(text):
    """'1,2,4' -> [1, 2, 4]; every value a positive integer (an argparse type)."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("expected comma-separated integers, got %r" % text)
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected positive integers, got %r" % text)
    return values


def prepare_process(framework, device, threads):
    """Environment variables that must be set before the framework is imported.

    A cpu cell hides the GPUs: TensorFlow would otherwise place its operations on a GPU.
    """
    os.environ.update(BOTH if framework == "both" else
                      frameworks.FRAMEWORKS[framework].environment)
    if device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for variable in THREAD_VARIABLES:
        os.environ[variable] = str(threads)
