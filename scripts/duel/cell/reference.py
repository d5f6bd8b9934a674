"""One set of weights for both frameworks, and the output every cell is checked against.

For a model, this builds the PyTorch model from its architecture with seeded weights (or loads
a save_pretrained folder's: models.build_pytorch), saves it, converts exactly those weights to
TensorFlow (transformers' own PyTorch-to-TF loader, offline from the local folder) and saves them
too; then it records PyTorch eager's final hidden state for each sequence length on the same
input the cells use (one row: the cells repeat it over the batch). Every cell then loads these weights, and each point records the largest absolute
difference between its own final hidden state and that reference. A difference beyond
``tolerance(reference)`` makes the point an ``error``: the frameworks did not compute the same
thing, and their times would not be comparable.

Layout of the folder: ``pytorch/`` and ``tensorflow/`` (save_pretrained), ``length-<L>.npy``
(float32, shape L x hidden), and ``reference.json`` written last (what was made, with versions).

Generation has its own weights (the causal language model, ``pytorch-gen/``, ``tensorflow-gen/``)
and reference (``generated-<L>.npz``: PyTorch eager's greedy tokens after the prompt of length L
and, per step, the margin between its two largest logits), manifest ``generation.json``. Greedy
decoding amplifies rounding: where two logits are nearly equal, PyTorch and TensorFlow may pick
different tokens, and every token after the first divergence follows a different prefix. So a
point's tokens agree up to a first divergence (``tokens_agree``), and a divergence is allowed only
where the reference's top two logits lie within the fp32 tolerance of the output check
(``token_judgement``): a near-tie broken by rounding, not another computation.
"""
import gc
import os
import sys
import time
import traceback

import numpy as np

from . import compat, contract, files, models

# Random weights give final hidden states of order 1; different kernels and fusions
# (PyTorch vs TensorFlow, TorchScript, compile, XLA) differ by about 1e-6 to 1e-4 in fp32.
# Mixed precision rounds every matrix product's inputs: fp16 keeps 11 significant bits, bf16 8,
# and the differences seen against fp32 grow accordingly (docs/modes.md, "Precision").
# tf32: fp32 with TF32 matrix products (fp16's 10-bit mantissa, so fp16's tolerance).
RELATIVE_TOLERANCE = {"fp32": 1e-3, "tf32": 2e-2, "fp16": 2e-2, "bf16": 1e-1}


def tolerance(reference, precision="fp32"):
    """The largest acceptable absolute difference from the fp32 ``reference`` for a point run
    in ``precision``."""
    return RELATIVE_TOLERANCE[precision] * max(1.0, float(np.abs(reference).max()))


def max_abs_difference(hidden, reference):
    """Largest |hidden - reference| over every row of a batch (each row had the same input)."""
    return float(np.abs(np.asarray(hidden, dtype=np.float64) -
                        np.asarray(reference, dtype=np.float64)[None]).max())


# The folder of a task's weights beside the reference (each framework's save_pretrained).
TASK_WEIGHTS = {"inference": "", "training": "-lm", "generation": "-gen"}


def weights_folder(folder, framework, task):
    """Where ``framework``'s weights for ``task`` lie in a reference ``folder``."""
    return os.path.join(folder, framework + TASK_WEIGHTS[task])


def reference_path(folder, length):
    return os.path.join(folder, "length-%d.npy" % length)


def load_reference(folder, length):
    path = reference_path(folder, length)
    return np.load(path) if os.path.exists(path) else None


def unbuildable(spec, task, folder, name, log, started):
    """Where this era's transformers cannot build ``spec`` for ``task`` in both frameworks (an
    older release without its model type): the manifest ``name`` saying why, with no weights,
    and its cells' points become ``skipped`` rows with the same reason; else None."""
    frameworks = ["pytorch"] + (["tensorflow"] if _tensorflow() is not None else [])
    reason = next((why for why in (models.missing(spec, framework, task)
                                   for framework in frameworks) if why), None)
    if reason is None:
        return None
    log.write("%s: %s\n" % (spec.name, reason))
    if not os.path.isdir(folder):
        os.makedirs(folder)
    return write_manifest(folder, name, {"model": spec.name, "unsupported": reason}, [], started)


def _each_length(spec, lengths, extra, make, log):
    """(lengths made, {length: error line}): ``make(length)`` for each length that leaves the
    model's positions room for ``extra`` tokens more; a failure is kept as its line (the cells
    will report the same failure as their rows)."""
    made, failed = [], {}
    for length in sorted(set(lengths)):
        if spec.max_sequence_length is not None and length + extra > spec.max_sequence_length:
            continue
        try:
            make(length)
            made.append(length)
        except Exception as error:
            traceback.print_exc(file=log)
            failed[str(length)] = contract.error_line(error)
    return made, failed


def make_reference(spec, seed, lengths, folder, token_ids, log=sys.stderr, started=None):
    """Write the folder described in the module docstring; returns its manifest."""
    import torch

    skipped = unbuildable(spec, "inference", folder, "reference.json", log, started)
    if skipped is not None:
        return dict(skipped, lengths=[], failed={})
    model = models.build_pytorch(spec, "inference", seed).eval()
    pytorch_dir, tensorflow_dir = os.path.join(folder, "pytorch"), os.path.join(folder, "tensorflow")
    for path in (pytorch_dir, tensorflow_dir):  # transformers 2.1.1 wants them to exist
        if not os.path.isdir(path):
            os.makedirs(path)
    model.save_pretrained(pytorch_dir)
    def save_outputs(length):
        with torch.no_grad():
            outputs = model(torch.tensor(token_ids(spec, 1, length, seed)))
        hidden = compat.last_hidden_state(outputs)[0].numpy().astype(np.float32)
        np.save(reference_path(folder, length), hidden)

    made, failed = _each_length(spec, lengths, 0, save_outputs, log)
    del model
    gc.collect()

    if _tensorflow(log) is not None:
        tensorflow_model = compat.model_class(
            models.class_name(spec, "tensorflow", "inference")).from_pretrained(
            pytorch_dir, from_pt=True)
        tensorflow_model.save_pretrained(tensorflow_dir)
    parts = ["pytorch", "tensorflow"] + [os.path.basename(reference_path(folder, length))
                                         for length in made]
    return write_manifest(folder, "reference.json", {"model": spec.name, "seed": seed,
                                                     "lengths": made, "failed": failed}, parts,
                          started)


def _tensorflow(log=None):
    """TensorFlow, or None in an environment or image with PyTorch only (its PyTorch cells
    still run; TensorFlow cells would find no TensorFlow copy of the weights)."""
    try:
        import tensorflow as tf
    except ImportError:
        if log is not None:
            log.write("tensorflow is not installed here: no TensorFlow copy of the weights\n")
        return None
    return tf


def make_training_weights(spec, seed, folder, log=sys.stderr, started=None):
    """The model with its language-modelling head, seeded, saved for both frameworks
    (``pytorch-lm/``, ``tensorflow-lm/``): every training cell of the model, in either framework,
    starts each point from exactly these weights. Manifest ``training.json``, written last."""
    skipped = unbuildable(spec, "training", folder, "training.json", log, started)
    if skipped is not None:
        return dict(skipped, heads=skipped["unsupported"])
    heads = models.class_name(spec, "pytorch", "training")
    model = models.build_pytorch(spec, "training", seed)
    pytorch_dir = os.path.join(folder, "pytorch-lm")
    tensorflow_dir = os.path.join(folder, "tensorflow-lm")
    for path in (pytorch_dir, tensorflow_dir):
        if not os.path.isdir(path):
            os.makedirs(path)
    model.save_pretrained(pytorch_dir)
    del model
    gc.collect()
    if _tensorflow(log) is not None:
        compat.model_class(models.class_name(spec, "tensorflow", "training")).from_pretrained(
            pytorch_dir, from_pt=True).save_pretrained(tensorflow_dir)
    return write_manifest(folder, "training.json", {"model": spec.name, "seed": seed,
                                                    "heads": heads},
                          ["pytorch-lm", "tensorflow-lm"], started)


GENERATION_WEIGHTS = (weights_folder("", "pytorch", "generation"),
                      weights_folder("", "tensorflow", "generation"))


def generated_path(folder, length):
    return os.path.join(folder, "generated-%d.npz" % length)


def load_generated(folder, length):
    """(tokens, margins, logit scale) of PyTorch eager's generation after a prompt of
    ``length``, or None where the reference has none."""
    path = generated_path(folder, length)
    if not os.path.exists(path):
        return None
    stored = np.load(path)
    return stored["tokens"], stored["margins"], float(stored["scale"])


def greedy_steps(model, prompt, new_tokens):
    """PyTorch's greedy generation of ``new_tokens`` after ``prompt`` (a 1 x L tensor), with each
    step's scores: (tokens, top-1 minus top-2 logit per step, largest |logit|)."""
    import torch

    kwargs = compat.generate_arguments(prompt.shape[1], new_tokens,
                                       pad_token(model.config))
    with torch.no_grad():
        output = model.generate(prompt, attention_mask=torch.ones_like(prompt),
                                output_scores=True, return_dict_in_generate=True, **kwargs)
    scores = torch.stack([step[0] for step in output.scores]).float()
    finite = torch.where(torch.isfinite(scores), scores, torch.full_like(scores, -1e30))
    top = torch.topk(finite, 2, dim=-1).values
    tokens = output.sequences[0, prompt.shape[1]:].numpy().astype(np.int64)
    scale = float(scores[torch.isfinite(scores)].abs().max())
    return tokens, (top[:, 0] - top[:, 1]).numpy().astype(np.float64), scale


def pad_token(config):
    """The token generate pads with (a prompt here is never padded): the model's own, else its
    end-of-sequence token, else 0; given, so that generate need not guess and warn."""
    for name in ("pad_token_id", "eos_token_id"):
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    return 0


def make_generation_reference(spec, seed, lengths, new_tokens, folder, token_ids,
                              log=sys.stderr, started=None):
    """The causal language model, seeded, saved for both frameworks (GENERATION_WEIGHTS), and
    PyTorch eager's greedy tokens for each prompt length (generated_path). Manifest
    ``generation.json``, written last."""
    import torch

    skipped = unbuildable(spec, "generation", folder, "generation.json", log, started)
    if skipped is not None:
        return dict(skipped, lengths=[], failed={})
    model = models.build_pytorch(spec, "generation", seed).eval()
    pytorch_dir, tensorflow_dir = (os.path.join(folder, name) for name in GENERATION_WEIGHTS)
    for path in (pytorch_dir, tensorflow_dir):
        if not os.path.isdir(path):
            os.makedirs(path)
    model.save_pretrained(pytorch_dir)
    def save_tokens(length):
        tokens, margins, scale = greedy_steps(
            model, torch.tensor(token_ids(spec, 1, length, seed)), new_tokens)
        np.savez(generated_path(folder, length), tokens=tokens, margins=margins,
                 scale=np.float64(scale))

    made, failed = _each_length(spec, lengths, new_tokens, save_tokens, log)
    del model
    gc.collect()
    if _tensorflow(log) is not None:
        with compat.random_init_skipped():
            compat.model_class(models.class_name(spec, "tensorflow", "generation")).from_pretrained(
                pytorch_dir, from_pt=True).save_pretrained(tensorflow_dir)
    parts = list(GENERATION_WEIGHTS) + [os.path.basename(generated_path(folder, length))
                                        for length in made]
    return write_manifest(folder, "generation.json", {
        "model": spec.name, "seed": seed, "new_tokens": new_tokens, "lengths": made,
        "failed": failed}, parts, started)


def token_judgement(generated, expected, precision="fp32"):
    """A point's generated tokens (batch x new tokens; every row had the same prompt) against
    the reference (load_generated): its token columns, and why they make the point an error
    (None where they agree, or first diverge at a near-tie of the reference's logits)."""
    tokens, margins, scale = expected
    generated = np.asarray(generated)
    count = min(generated.shape[1], len(tokens))
    agree = count
    for row in generated:
        differ = np.nonzero(row[:count] != tokens[:count])[0]
        if differ.size:
            agree = min(agree, int(differ[0]))
    columns = {"tokens_agree": agree, "token_margin": None,
               "token_tolerance": tolerance(np.array([scale]), precision)}
    if generated.shape[1] != len(tokens):
        return columns, ("generated %d tokens where the reference has %d"
                         % (generated.shape[1], len(tokens)))
    if agree == count:
        return columns, None
    columns["token_margin"] = float(margins[agree])
    if columns["token_margin"] <= columns["token_tolerance"]:
        return columns, None
    return columns, ("generated tokens differ from PyTorch eager's on the same weights and prompt "
                     "from token %d of %d, where its top two logits are %.3g apart > tolerance "
                     "%.3g" % (agree + 1, count, columns["token_margin"],
                               columns["token_tolerance"]))


def write_manifest(folder, name, manifest, parts, started=None):
    """Write ``name`` in ``folder`` last and atomically, with the versions that made it and the
    size, modification time and SHA-256 of every file under ``parts`` (paths in ``folder``):
    planning checks them before any cell reads these files (duel/host/plan/references.py).
    ``started``: when the job started (time.time()), for its ``wall_s`` (host/tables/breakdown)."""
    import torch

    tf = _tensorflow()
    manifest = dict(manifest, torch=torch.__version__,
                    tensorflow=tf.__version__ if tf is not None else None,
                    transformers=compat.transformers_version(),
                    files=files.describe_files(folder, parts),
                    wall_s=time.time() - started if started is not None else None)
    files.write_json(os.path.join(folder, name), manifest)
    return manifest

