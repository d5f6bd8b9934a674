"""The mode registry (duel/cell/modes.py) is the one list of modes: what cannot read it (the
config schema's enum, the charts' colours, the exporters) agrees with it, so a new mode cannot
be half added."""
import os

import pytest
import yaml

from conftest import REPO
from duel.cell import export, frameworks, modes

pytestmark = pytest.mark.unit

SCHEMA = os.path.join(REPO, "config", "schema", "config.schema.yaml")


def schema_modes():
    """{framework: the modes its enum allows} from the config schema."""
    with open(SCHEMA) as handle:
        schema = yaml.safe_load(handle)
    return {framework: entry["items"]["enum"]
            for framework, entry in schema["properties"]["modes"]["properties"].items()}


def schema_frameworks():
    with open(SCHEMA) as handle:
        return yaml.safe_load(handle)["properties"]["frameworks"]["items"]["enum"]


def colour_modes():
    """{framework: the modes that have a chart colour}."""
    listed = {}
    for framework, mode in modes.COLOURS:
        listed.setdefault(framework, []).append(mode)
    return listed


def without(framework, name):
    return tuple(mode for mode in modes.MODES if (mode.framework, mode.name) != (framework, name))


def test_the_registry_is_sound():
    assert modes.problems() == []


def test_the_schema_enum_allows_exactly_the_registry_modes():
    assert modes.differences(schema_modes()) == []
    assert schema_frameworks() == list(modes.frameworks())


def test_every_mode_has_a_chart_colour_and_every_colour_a_mode():
    assert modes.differences(colour_modes()) == []


def test_every_artifact_format_has_an_exporter():
    assert sorted(export.EXPORTERS) == sorted(modes.ARTIFACT_FORMATS)


def test_the_agreement_check_finds_a_mode_missing_on_either_side_and_an_unknown_framework():
    assert modes.differences(schema_modes(), without("tensorflow", "xla")) == [
        "tensorflow xla: listed, not in the registry"]
    listed = schema_modes()
    listed["pytorch"] = [name for name in listed["pytorch"] if name != "jitcpp"]
    listed["jax"] = ["eager"]
    assert modes.differences(listed) == ["pytorch jitcpp: in the registry, not listed",
                                         "jax eager: listed, not in the registry"]


def test_the_soundness_check_finds_each_kind_of_inconsistency():
    broken = modes.MODES + (
        modes.Mode("pytorch", "eager", modes.EAGER, None),
        modes.Mode("pytorch", "fast", "turbo", None),
        modes.Mode("pytorch", "onnxpy", modes.DEPLOYED_PYTHON, None),
        modes.Mode("pytorch", "savedx", modes.DEPLOYED_CPP, "savedmodel"),
        modes.Mode("tensorflow", "jitpy", modes.DEPLOYED_PYTHON, "savedmodel"),
        modes.Mode("tensorflow", "savedgen", modes.DEPLOYED_PYTHON, "savedmodel", True),
    )
    formats = dict(modes.ARTIFACT_FORMATS, onnx=modes.ArtifactFormat("onnx", "pytorch", "eager"))
    assert modes.problems(broken, formats) == [
        "pytorch jitpy: a deployed mode's name must be its own",
        "pytorch eager: listed twice",
        "pytorch fast: unknown kind 'turbo'",
        "pytorch onnxpy: a deployed mode, and only one, names its artifact format",
        "pytorch savedx: artifact format 'savedmodel' is not one of pytorch's",
        "tensorflow jitpy: a deployed mode's name must be its own",
        "tensorflow savedgen: only a mode run in Python generates",
        "artifact format onnx: exported from pytorch eager, not a graph mode",
    ]


def test_a_deployed_mode_runs_the_graph_of_its_loader_and_of_the_mode_it_was_exported_from():
    deployed = {mode.name: mode for mode in modes.MODES if mode.kind == modes.DEPLOYED_CPP}
    assert modes.same_graph_in_python(deployed["jitcpp"]) == ("jitpy", "torchscript")
    assert modes.same_graph_in_python(deployed["savedcpp"]) == ("savedpy", "function")
    assert modes.same_graph_in_python(
        deployed["jitcpp"], without("pytorch", "jitpy")) == ("torchscript",)


def test_the_eager_modes_and_one_graph_mode_share_a_process_eager_first():
    assert modes.process_groups("tensorflow", ["function", "eager"]) == [("eager", "function")]
    assert modes.process_groups("pytorch", ["compile", "eager", "torchscript", "jitcpp"]) == [
        ("eager", "compile"), ("torchscript",), ("jitcpp",)]
    assert modes.process_groups("tensorflow", ["savedpy", "xla"]) == [("xla",), ("savedpy",)]
    assert modes.joined(("eager", "function")) == "eager+function"
    assert modes.members("eager+function") == ["eager", "function"]
    assert modes.members("eager") == ["eager"]


def test_the_modes_that_generate():
    assert modes.generating("pytorch") == ("eager", "compile")
    assert modes.generating("tensorflow") == ("eager", "xla")


@pytest.mark.unit
def test_every_framework_with_modes_is_one_entry_of_the_framework_registry():
    assert modes.frameworks() == frameworks.NAMES
    assert len({entry.short for entry in frameworks.FRAMEWORKS.values()}) == len(frameworks.NAMES)
