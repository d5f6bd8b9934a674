"""config/README.md is made from the config schema (duel/host/render/config_doc.py): the
committed page is what the generator writes now, and it names every key of the schema, nested
ones too, with the schema's own description."""
import os

import pytest

from conftest import REPO
from duel.host.render import config_doc

pytestmark = pytest.mark.unit


def committed():
    with open(os.path.join(REPO, config_doc.OUTPUT)) as handle:
        return handle.read()


def test_the_committed_page_is_what_the_generator_writes():
    assert committed() == config_doc.render(*config_doc.load()), (
        "config/README.md is stale: run .venv/bin/python -m duel.host.render.config_doc")


def test_every_schema_key_has_a_row_with_its_description():
    schema, _ = config_doc.load()
    page = committed()
    found = config_doc.keys(schema)
    names = [name for name, _, _ in found]
    assert {"eras", "modes.pytorch", "training.learning_rate", "duel.warmup_calls",
            "timeit.repeat", "images.<era>-<device>"} <= set(names)
    assert set(schema["properties"]) <= set(names)
    for name, node, _ in found:
        assert node.get("description"), "the schema gives %s no description" % name
        (row,) = [line for line in page.splitlines() if line.startswith("| `%s` |" % name)]
        assert config_doc.cell(node["description"], prose=True) in row, name


def test_defaults_come_from_the_config_then_the_schema():
    schema, config = config_doc.load()
    rows = {name: config_doc.default_text(name, node, required, config)
            for name, node, required in config_doc.keys(schema)}
    assert rows["duel.warmup_calls"] == "`%s`" % config["duel"]["warmup_calls"]
    assert rows["timeit.repeat"] == "`30`"  # not in config.yaml: the schema's default
    assert rows["cell_threads"] == "unset"
    assert config_doc.default_text("models", {}, True, {}) == "required"


def test_the_check_sees_a_changed_description(tmp_path):
    schema, config = config_doc.load()
    schema["properties"]["seed"]["description"] = "something else"
    assert config_doc.render(schema, config) != committed()
