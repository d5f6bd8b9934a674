"""The ten 2019 checkpoints: architecture files, families and the 2019 maximum lengths."""
import glob
import os

import pytest

from conftest import MODELS
from duel.cell import compat, models

pytestmark = pytest.mark.unit

# The tokenizer limits the 2019 script applied (max_model_input_sizes).
MAXIMUM_2019 = {
    "gpt2": 1024, "distilgpt2": 1024, "bert-base-cased": 512, "roberta-base": 512,
    "distilbert-base-uncased": 512, "openai-gpt": 512, "xlm-mlm-en-2048": 512, "ctrl": 256,
    "xlnet-base-cased": None, "transfo-xl-wt103": None,
}


def test_all_ten_2019_checkpoints_are_shipped_with_their_2019_maximum_length():
    specs = {os.path.basename(path)[:-5]: models.load_model_spec(path)
             for path in glob.glob(os.path.join(MODELS, "*.json"))}
    assert set(specs) == set(MAXIMUM_2019)
    for name, spec in specs.items():
        assert spec.name == name
        assert spec.max_sequence_length == MAXIMUM_2019[name]
        assert models.vocab_size(spec) > 1000


def test_every_family_builds_a_config_with_the_published_sizes():
    expected = {"bert-base-cased": ("hidden_size", 768), "ctrl": ("n_embd", 1280),
                "xlm-mlm-en-2048": ("emb_dim", 2048), "transfo-xl-wt103": ("d_model", 1024)}
    for path in glob.glob(os.path.join(MODELS, "*.json")):
        spec = models.load_model_spec(path)
        family = models.FAMILIES[spec.family]
        config = compat.build_config(family.config_class, spec.family, spec.architecture)
        assert config.vocab_size == spec.architecture["vocab_size"]
        if spec.name in expected:
            key, value = expected[spec.name]
            assert getattr(config, key) == value


def test_outputs_are_read_as_objects_or_tuples():
    class Output(object):
        last_hidden_state = "state"
    assert compat.last_hidden_state(Output()) == "state"
    assert compat.last_hidden_state(("first", "second")) == "first"
