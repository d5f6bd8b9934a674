"""The shipped checkpoints (the ten 2019 ones, ALBERT and ELECTRA): architecture files, families,
maximum lengths; which model types planning accepts, and save_pretrained folders as models."""
import glob
import json
import os

import pytest

from conftest import MODELS
from duel.cell import compat, estimate, flops, models
from duel.host.plan import config_keys, model_files, planner

pytestmark = pytest.mark.unit

# The tokenizer limits the 2019 script applied (max_model_input_sizes), and ALBERT's and ELECTRA's.
MAXIMUM = {
    "gpt2": 1024, "distilgpt2": 1024, "bert-base-cased": 512, "roberta-base": 512,
    "distilbert-base-uncased": 512, "openai-gpt": 512, "xlm-mlm-en-2048": 512, "ctrl": 256,
    "xlnet-base-cased": None, "transfo-xl-wt103": None,
    "albert-base-v2": 512, "electra-small-discriminator": 512,
}
# The classes each 2019 family was built with before transformers' Auto classes chose them:
# (inference, training) in PyTorch; TensorFlow's are "TF" + the same.
CLASSES_2019 = {
    "bert": ("BertModel", "BertForMaskedLM"), "gpt2": ("GPT2Model", "GPT2LMHeadModel"),
    "distilbert": ("DistilBertModel", "DistilBertForMaskedLM"),
    "roberta": ("RobertaModel", "RobertaForMaskedLM"),
    "openai-gpt": ("OpenAIGPTModel", "OpenAIGPTLMHeadModel"),
    "xlnet": ("XLNetModel", "XLNetLMHeadModel"), "xlm": ("XLMModel", "XLMWithLMHeadModel"),
    "transfo-xl": ("TransfoXLModel", "TransfoXLLMHeadModel"),
    "ctrl": ("CTRLModel", "CTRLLMHeadModel"),
}


def test_every_checkpoint_is_shipped_with_its_maximum_length():
    specs = {os.path.basename(path)[:-5]: models.load_model_spec(path)
             for path in glob.glob(os.path.join(MODELS, "*.json"))}
    assert set(specs) == set(MAXIMUM)
    for name, spec in specs.items():
        assert spec.name == name and spec.weights is None
        assert spec.max_sequence_length == MAXIMUM[name]
        assert models.vocab_size(spec) > 1000


def test_every_family_builds_a_config_with_the_published_sizes():
    expected = {"bert-base-cased": ("hidden_size", 768), "ctrl": ("n_embd", 1280),
                "xlm-mlm-en-2048": ("emb_dim", 2048), "transfo-xl-wt103": ("d_model", 1024),
                "albert-base-v2": ("embedding_size", 128),
                "electra-small-discriminator": ("hidden_size", 256)}
    for path in glob.glob(os.path.join(MODELS, "*.json")):
        spec = models.load_model_spec(path)
        config = compat.build_config(spec.family, spec.architecture)
        assert config.vocab_size == spec.architecture["vocab_size"]
        if spec.name in expected:
            key, value = expected[spec.name]
            assert getattr(config, key) == value


def test_the_auto_classes_choose_the_2019_families_classes():
    for family, (model, head) in CLASSES_2019.items():
        for framework, prefix in (("pytorch", ""), ("tensorflow", "TF")):
            assert compat.auto_class_name(family, framework, "inference") == prefix + model
            assert compat.auto_class_name(family, framework, "training") == prefix + head
    assert compat.auto_class_name("albert", "tensorflow", "training") == "TFAlbertForMaskedLM"
    assert compat.auto_class_name("electra", "pytorch", "inference") == "ElectraModel"


def write_model(folder, name, family, **architecture):
    path = folder / (name + ".json")
    path.write_text(json.dumps({"name": name, "family": family, "max_sequence_length": None,
                                "architecture": architecture}))
    return path


def test_a_model_type_without_a_tensorflow_class_is_refused_in_one_line(tmp_path):
    """Llama: transformers builds it in PyTorch only."""
    path = write_model(tmp_path, "tiny-llama", "llama", vocab_size=100, hidden_size=16,
                       num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    with pytest.raises(config_keys.PlanError) as error:
        model_files.check_models(["tiny-llama"], str(tmp_path))
    assert str(error.value) == (
        "%s: model 'tiny-llama' cannot run: transformers %s has no TensorFlow model for model "
        "type 'llama'" % (path, compat.transformers_version()))


def test_a_model_type_transformers_does_not_know_is_refused_in_one_line(tmp_path):
    path = write_model(tmp_path, "gpt5", "gpt5", vocab_size=100)
    with pytest.raises(config_keys.PlanError) as error:
        model_files.check_models(["gpt5"], str(tmp_path))
    message = str(error.value)
    assert message.startswith("%s: model 'gpt5' cannot run: transformers " % path)
    assert message.endswith("has no PyTorch model for model type 'gpt5'")
    assert len(message.splitlines()) == 1


def test_a_name_that_is_neither_a_file_nor_a_folder_is_refused(tmp_path):
    with pytest.raises(config_keys.PlanError, match="unknown model 'nothing' .*nor a folder"):
        model_files.check_models(["nothing"], str(tmp_path))


def test_a_folder_without_weights_is_refused(tmp_path):
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(config_keys.PlanError, match="model 'half' has no PyTorch weights"):
        model_files.check_models(["half"], str(tmp_path))


def test_a_model_type_counted_nowhere_has_no_flops_and_says_why(tmp_path):
    """MPNet: both frameworks build it, flops.py has no count for it: its points' flops stay
    empty, planning says so in a line, and sizes its memory from the config transformers
    makes."""
    architecture = {"vocab_size": 100, "hidden_size": 16, "num_hidden_layers": 2,
                    "num_attention_heads": 2, "intermediate_size": 32}
    write_model(tmp_path, "tiny-mpnet", "mpnet", **architecture)
    spec = model_files.check_models(["tiny-mpnet"], str(tmp_path))["tiny-mpnet"]
    config = {"models": ["tiny-mpnet", "gpt2"], "models_dir": str(tmp_path), "eras": ["current"],
              "devices": ["cpu"], "frameworks": ["pytorch"], "modes": {"pytorch": ["eager"]}}
    write_model(tmp_path, "gpt2", "gpt2", **json.load(open(os.path.join(
        MODELS, "gpt2.json")))["architecture"])
    assert planner.lacking(config, str(tmp_path)) == [
        "model tiny-mpnet: %s: its flops and achieved_gflops stay empty" % flops.not_counted(spec)]
    assert flops.point_flops(spec, "inference", 1, 8) is None
    assert flops.point_flops(spec, "training", 1, 8) is None
    assert "model type 'mpnet'" in flops.not_counted(spec)
    assert flops.not_counted(models.load_model_spec(os.path.join(MODELS, "gpt2.json"))) is None
    assert model_files.sizes(spec) == (16, 2, 100)
    assert estimate.call_seconds(None, 2) > estimate.call_seconds(1e9, 2)


def test_outputs_are_read_as_objects_or_tuples():
    class Output(object):
        last_hidden_state = "state"
    assert compat.last_hidden_state(Output()) == "state"
    assert compat.last_hidden_state(("first", "second")) == "first"
