"""Analytic forward FLOPs of a point, per model family, from the architecture alone; for a family
counted nowhere here, none (``not_counted`` says why): an empty ``flops`` column, never a guess.

Counted like ``torch.utils.flop_counter``: the matrix products only (2 FLOPs per multiply-add);
softmax, GELU, layer norms, embedding lookups and additions are left out (a few percent at most).
B = batch, L = length, d = hidden size (= heads x head size in every family here), f = the
feed-forward inner size, n = layers. Each layer of every family:

    8 B L d^2   query, key, value and output projections
    4 B L^2 d   attention scores (Q K^T) and the weighted sum of values
    4 B L d f   the two feed-forward projections

plus, per family:
- bert, roberta, albert: the pooler, 2 B d^2.
- albert, electra: embeddings of size E (``embedding_size``) projected to d, 2 B L E d (electra
  only where E differs from d); albert's layers share their weights but each runs.
- xlnet (bidirectional, no memory): relative positions over 2L offsets are projected per layer,
  4 B L d^2, and scored against the queries, 4 B L^2 d.
- transfo-xl: every call without memory starts from ``mem_len`` zero memories, so keys and values
  span K = L + mem_len: the layer projects queries, keys and values over K, 6 B K d^2, positions
  over K once, 2 K d^2, scores content and positions, 4 B L K d, weighs values, 2 B L K d, and
  projects the output, 2 B L d^2 (adaptive-embedding projections left out, under 1%).

A training step (training_flops) is counted as three forward passes (the backward pass costs
about two: gradients for activations and for weights) of the model with its language-modelling
head, whose output projection adds 2 B L d V (V the vocabulary); albert's and electra's heads
project d to E first and E to V, 2 B L (d E + E V).

tests/cell/test_flops.py checks these against torch's own counter on real models of each family.
"""

# family: (hidden size key, layer count key, feed-forward size key or None for 4 d)
DIMENSIONS = {
    "bert": ("hidden_size", "num_hidden_layers", "intermediate_size"),
    "roberta": ("hidden_size", "num_hidden_layers", "intermediate_size"),
    "distilbert": ("dim", "n_layers", "hidden_dim"),
    "gpt2": ("n_embd", "n_layer", "n_inner"),
    "openai-gpt": ("n_embd", "n_layer", None),
    "ctrl": ("n_embd", "n_layer", "dff"),
    "xlm": ("emb_dim", "n_layers", None),
    "xlnet": ("d_model", "n_layer", "d_inner"),
    "transfo-xl": ("d_model", "n_layer", "d_inner"),
    "albert": ("hidden_size", "num_hidden_layers", "intermediate_size"),
    "electra": ("hidden_size", "num_hidden_layers", "intermediate_size"),
}
POOLED = ("bert", "roberta", "albert")
PROJECTED_EMBEDDINGS = ("albert", "electra")  # embeddings of embedding_size, projected to d


def not_counted(spec):
    """Why ``spec``'s points have no FLOPs, or None where they are counted."""
    if spec.family in DIMENSIONS:
        return None
    return ("no analytic FLOPs count for model type %r (scripts/duel/cell/flops.py counts %s)"
            % (spec.family, ", ".join(sorted(DIMENSIONS))))


def _embedding_size(spec):
    """E of a family whose embeddings are projected to d, else None (none projected)."""
    if spec.family not in PROJECTED_EMBEDDINGS:
        return None
    arch = spec.architecture
    size = arch.get("embedding_size")
    hidden = arch[DIMENSIONS[spec.family][0]]
    if size is None or (spec.family == "electra" and size == hidden):
        return None
    return float(size)


def forward_flops(spec, batch, length):
    """FLOPs of one forward pass of ``spec``'s base model on a batch x length input; None for a
    family counted nowhere here (not_counted)."""
    if not_counted(spec):
        return None
    hidden_key, layers_key, ffn_key = DIMENSIONS[spec.family]
    arch = spec.architecture
    d, n = float(arch[hidden_key]), float(arch[layers_key])
    f = float(arch.get(ffn_key) or 4 * d) if ffn_key else 4 * d
    b, l = float(batch), float(length)
    if spec.family == "transfo-xl":
        k = l + float(arch.get("mem_len") or 0)
        layer = 6 * b * k * d * d + 2 * k * d * d + 6 * b * l * k * d + 2 * b * l * d * d
        return n * (layer + 4 * b * l * d * f)
    layer = 8 * b * l * d * d + 4 * b * l * l * d + 4 * b * l * d * f
    if spec.family == "xlnet":
        layer += 4 * b * l * d * d + 4 * b * l * l * d
    total = n * layer
    if spec.family in POOLED:
        total += 2 * b * d * d
    embedding = _embedding_size(spec)
    if embedding:
        total += 2 * b * l * embedding * d
    return total


def training_flops(spec, batch, length):
    """FLOPs of one training step: 3 x (forward + the language-modelling head's projection);
    None for a family counted nowhere here."""
    forward = forward_flops(spec, batch, length)
    if forward is None:
        return None
    d = float(spec.architecture[DIMENSIONS[spec.family][0]])
    vocab, tokens = float(spec.architecture["vocab_size"]), float(batch) * length
    embedding = spec.architecture.get("embedding_size") \
        if spec.family in PROJECTED_EMBEDDINGS else None
    if embedding:
        head = 2.0 * tokens * (d * embedding + embedding * vocab)
    else:
        head = 2.0 * tokens * d * vocab
    return 3.0 * (forward + head)


def point_flops(spec, task, batch, length):
    """The FLOPs of one call of a point: a forward pass (inference) or a training step; None
    where not counted (and for generation, whose steps are not counted here)."""
    if task == "generation":
        return None
    if task == "training":
        return training_flops(spec, batch, length)
    return forward_flops(spec, batch, length)


def achieved_gflops(flops, milliseconds):
    """GFLOP/s of a point from its FLOPs and its reported time per call."""
    if not flops or not milliseconds:
        return None
    return flops / (milliseconds / 1000.0) / 1e9
