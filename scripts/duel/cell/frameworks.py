"""The frameworks under test, one entry each: what every part of Duel knows of a framework.

The cell (its process environment, the model classes, the deployed runtime), planning, the
tables, the verdicts and the stacks (the package a lock pins) read a framework's name, label,
short name, package, class prefix and runtime here and nowhere else. Python 3.6-compatible and
stdlib-only, like all of duel/cell.
"""
from collections import OrderedDict, namedtuple

# name: the config's word; label: what a person reads; short: a pair side's column suffix;
# package: the distribution a lock pins; class_prefix: before transformers' class and Auto
# mapping names; runtime: the C/C++ library a deployed artifact runs in; environment: variables
# set before the framework is imported (transformers loads only this framework; torch.compile
# compiles in the calling process, not in workers beside the timed cores).
Framework = namedtuple("Framework",
                       "name label short package class_prefix runtime environment")

FRAMEWORKS = OrderedDict((entry.name, entry) for entry in (
    Framework("pytorch", "PyTorch", "pt", "torch", "", "libtorch",
              {"USE_TF": "0", "USE_TORCH": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"}),
    Framework("tensorflow", "TensorFlow", "tf", "tensorflow", "TF", "tensorflow",
              {"USE_TORCH": "0", "USE_TF": "1", "TF_USE_LEGACY_KERAS": "1"}),
))
NAMES = tuple(FRAMEWORKS)


def label(name):
    """'PyTorch' for 'pytorch'; an unknown name as it is."""
    return FRAMEWORKS[name].label if name in FRAMEWORKS else name


def package(name):
    """The distribution a lock pins for framework ``name`` ('torch' for 'pytorch')."""
    return FRAMEWORKS[name].package
