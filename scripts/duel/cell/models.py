"""Model specs: the architecture of each benchmarked checkpoint, read from config/models/*.json.

Weights are never downloaded: a model is built from its published architecture with seeded
random weights (inference speed does not depend on the weight values). Each JSON file holds
``name``, ``family``, ``max_sequence_length`` (the tokenizer limit the 2019 script applied, or
null) and ``architecture`` (the checkpoint's config.json hyper-parameters).
"""
import json
from collections import namedtuple

ModelSpec = namedtuple("ModelSpec", "name family max_sequence_length architecture")

Family = namedtuple(
    "Family", "config_class pytorch_class tensorflow_class pytorch_lm_class tensorflow_lm_class"
)

# transformers class names per model family (the same names in 2.1.1 and 4.x): the bare model
# (inference) and the model with its language-modelling head (training).
FAMILIES = {
    "bert": Family("BertConfig", "BertModel", "TFBertModel",
                   "BertForMaskedLM", "TFBertForMaskedLM"),
    "gpt2": Family("GPT2Config", "GPT2Model", "TFGPT2Model",
                   "GPT2LMHeadModel", "TFGPT2LMHeadModel"),
    "distilbert": Family("DistilBertConfig", "DistilBertModel", "TFDistilBertModel",
                         "DistilBertForMaskedLM", "TFDistilBertForMaskedLM"),
    "roberta": Family("RobertaConfig", "RobertaModel", "TFRobertaModel",
                      "RobertaForMaskedLM", "TFRobertaForMaskedLM"),
    "openai-gpt": Family("OpenAIGPTConfig", "OpenAIGPTModel", "TFOpenAIGPTModel",
                         "OpenAIGPTLMHeadModel", "TFOpenAIGPTLMHeadModel"),
    "xlnet": Family("XLNetConfig", "XLNetModel", "TFXLNetModel",
                    "XLNetLMHeadModel", "TFXLNetLMHeadModel"),
    "xlm": Family("XLMConfig", "XLMModel", "TFXLMModel",
                  "XLMWithLMHeadModel", "TFXLMWithLMHeadModel"),
    "transfo-xl": Family("TransfoXLConfig", "TransfoXLModel", "TFTransfoXLModel",
                         "TransfoXLLMHeadModel", "TFTransfoXLLMHeadModel"),
    "ctrl": Family("CTRLConfig", "CTRLModel", "TFCTRLModel",
                   "CTRLLMHeadModel", "TFCTRLLMHeadModel"),
}


def load_model_spec(path):
    """Read one model's JSON file into a ModelSpec; unknown families are an error here."""
    with open(path) as handle:
        document = json.load(handle)
    family = document["family"]
    if family not in FAMILIES:
        raise ValueError(
            "%s: unknown model family %r (known: %s)"
            % (path, family, ", ".join(sorted(FAMILIES)))
        )
    return ModelSpec(
        name=document["name"],
        family=family,
        max_sequence_length=document.get("max_sequence_length"),
        architecture=document["architecture"],
    )


def vocab_size(spec):
    """The vocabulary size, which bounds the random token ids fed to the model."""
    return int(spec.architecture["vocab_size"])
