"""Every execution mode, once: its framework, its kind and the artifact it needs.

The adapters, the deployment modes, run_cell.py, the export, the planning, the comparison pairs
and the charts (their colours too) read this list; what cannot import it (the config schema's
enum) is held to it by tests/cell/test_modes.py. A mode is added here or nowhere.
Read by in-cell code: Python 3.6, standard library only.
"""
from collections import OrderedDict, namedtuple

EAGER = "eager"  # op by op, the framework's default
GRAPH = "graph"  # a graph built and run in this Python process
DEPLOYED_PYTHON = "deployed-python"  # an exported artifact loaded back into Python
DEPLOYED_CPP = "deployed-cpp"  # the same artifact run by the framework's C/C++ runtime
KINDS = (EAGER, GRAPH, DEPLOYED_PYTHON, DEPLOYED_CPP)
IN_PYTHON = (EAGER, GRAPH)  # the framework adapters' own modes (adapters/pytorch.py, ...)
DEPLOYED = (DEPLOYED_PYTHON, DEPLOYED_CPP)  # adapters/deployed.py

# ``artifact_format``: the export a deployed mode runs (ARTIFACT_FORMATS), None for the others.
# ``generates``: the mode also times transformers' generate (task generation); the others give
# generation points ``skipped`` rows. ``colour``: the mode's colour in the charts.
Mode = namedtuple("Mode", "framework name kind artifact_format generates colour")
Mode.__new__.__defaults__ = (False, None)
# ``exported_from``: the graph mode whose model the export starts from (export.py), so that
# mode, the artifact loaded in Python and the artifact in C/C++ run the same graph.
ArtifactFormat = namedtuple("ArtifactFormat", "name framework exported_from")

MODES = (
    Mode("pytorch", "eager", EAGER, None, generates=True, colour="#1f77b4"),
    Mode("pytorch", "torchscript", GRAPH, None, colour="#17becf"),  # torch.jit.trace per shape
    # torch.compile; generate: its decoding steps, over a static key/value cache
    Mode("pytorch", "compile", GRAPH, None, generates=True, colour="#9467bd"),
    Mode("pytorch", "jitpy", DEPLOYED_PYTHON, "torchscript", colour="#aec7e8"),  # torch.jit.load
    Mode("pytorch", "jitcpp", DEPLOYED_CPP, "torchscript", colour="#08306b"),  # libtorch
    Mode("tensorflow", "eager", EAGER, None, generates=True, colour="#ff7f0e"),
    Mode("tensorflow", "function", GRAPH, None, colour="#d62728"),  # tf.function
    # tf.function compiled by XLA; generate: the whole of it, the prompt padded
    Mode("tensorflow", "xla", GRAPH, None, generates=True, colour="#8c564b"),
    # tf.saved_model.load
    Mode("tensorflow", "savedpy", DEPLOYED_PYTHON, "savedmodel", colour="#ffbb78"),
    Mode("tensorflow", "savedcpp", DEPLOYED_CPP, "savedmodel", colour="#7f2704"),  # the C API
)
COLOURS = dict(((mode.framework, mode.name), mode.colour) for mode in MODES)  # for the charts
ARTIFACT_FORMATS = OrderedDict((artifact.name, artifact) for artifact in (
    ArtifactFormat("torchscript", "pytorch", "torchscript"),  # a file per shape
    ArtifactFormat("savedmodel", "tensorflow", "function"),  # one SavedModel for every shape
))


def frameworks(registry=MODES):
    """The frameworks that have modes, in registry order."""
    return tuple(OrderedDict.fromkeys(mode.framework for mode in registry))


def mode_names(framework=None, kinds=KINDS, registry=MODES):
    """The names of ``framework``'s modes (every framework's where None) of ``kinds``, in
    registry order, each once."""
    return tuple(OrderedDict.fromkeys(
        mode.name for mode in registry
        if framework in (None, mode.framework) and mode.kind in kinds))


def generating(framework, registry=MODES):
    """The names of ``framework``'s modes that time transformers' generate, in registry order."""
    return tuple(mode.name for mode in registry
                 if mode.framework == framework and mode.generates)


def by_framework(registry=MODES):
    """{framework: its mode names}, the shape of config key 'modes'."""
    return OrderedDict((framework, mode_names(framework, registry=registry))
                       for framework in frameworks(registry))


def same_graph_in_python(mode, registry=MODES):
    """The Python modes that run a deployed mode's graph: its artifact loaded in Python, then the
    graph mode the artifact was exported from (what Python costs is measured against each)."""
    loaded = tuple(other.name for other in registry
                   if other.kind == DEPLOYED_PYTHON and other.framework == mode.framework
                   and other.artifact_format == mode.artifact_format and other != mode)
    return loaded + (ARTIFACT_FORMATS[mode.artifact_format].exported_from,)


def differences(listed, registry=MODES):
    """How ``listed`` ({framework: mode names}, e.g. the schema's enum) differs from the
    registry, a line per difference; empty where they agree (order aside)."""
    wanted = by_framework(registry)
    lines = []
    for framework in list(wanted) + [name for name in listed if name not in wanted]:
        known, given = set(wanted.get(framework, ())), set(listed.get(framework, ()))
        for name in sorted(known - given):
            lines.append("%s %s: in the registry, not listed" % (framework, name))
        for name in sorted(given - known):
            lines.append("%s %s: listed, not in the registry" % (framework, name))
    return lines


# Modes that share a measuring process are named together, joined by this: "eager+function".
TOGETHER = "+"
# A framework's eager modes and one graph mode share a process, measured one mode after the
# other with the graph mode last: an eager mode leaves nothing behind, a graph mode its traces,
# which would sit under a later mode's peak memory (benchmarks/together.py measured it). Another
# graph mode, and a deployed mode (its artifact, or another runtime), has a process of its own.
def process_groups(framework, names, registry=MODES):
    """``names`` (modes of ``framework``, in config order) as the groups that share a process:
    the eager modes and the first graph mode, in that order; each other mode alone."""
    kinds = dict((mode.name, mode.kind) for mode in registry if mode.framework == framework)
    eager = [name for name in names if kinds.get(name) == EAGER]
    graphs = [name for name in names if kinds.get(name) == GRAPH]
    shared = tuple(eager + graphs[:1])
    groups = [shared] if shared else []
    return groups + [(name,) for name in names if name not in shared]


def joined(names):
    """('eager', 'function') -> 'eager+function': a process's modes as one name."""
    return TOGETHER.join(names)


def members(mode):
    """'eager+function' -> ['eager', 'function']; a single mode -> [mode]."""
    return mode.split(TOGETHER)


def problems(registry=MODES, artifact_formats=ARTIFACT_FORMATS):
    """What makes a registry inconsistent, a line each; empty for a sound one."""
    lines, seen = [], set()
    for mode in registry:
        key = (mode.framework, mode.name)
        if key in seen:
            lines.append("%s %s: listed twice" % key)
        seen.add(key)
        if mode.kind not in KINDS:
            lines.append("%s %s: unknown kind %r" % (key + (mode.kind,)))
        if (mode.kind in DEPLOYED) != (mode.artifact_format is not None):
            lines.append("%s %s: a deployed mode, and only one, names its artifact format" % key)
        artifact = artifact_formats.get(mode.artifact_format)
        if mode.artifact_format is not None and \
                (artifact is None or artifact.framework != mode.framework):
            lines.append("%s %s: artifact format %r is not one of %s's"
                         % (key + (mode.artifact_format, mode.framework)))
        if mode.generates and mode.kind not in IN_PYTHON:
            lines.append("%s %s: only a mode run in Python generates" % key)
        if mode.kind in DEPLOYED and \
                [other.framework for other in registry if other.name == mode.name] != \
                [mode.framework]:
            lines.append("%s %s: a deployed mode's name must be its own" % key)
    graphs = set((mode.framework, mode.name) for mode in registry if mode.kind == GRAPH)
    for artifact in artifact_formats.values():
        if (artifact.framework, artifact.exported_from) not in graphs:
            lines.append("artifact format %s: exported from %s %s, not a graph mode"
                         % (artifact.name, artifact.framework, artifact.exported_from))
    return lines
