"""Analytic forward FLOPs of a point, per model family, from the architecture alone.

Counted like ``torch.utils.flop_counter``: the matrix products only (2 FLOPs per multiply-add);
softmax, GELU, layer norms, embedding lookups and additions are left out (a few percent at most).
B = batch, L = length, d = hidden size (= heads x head size in every family here), f = the
feed-forward inner size, n = layers. Each layer of every family:

    8 B L d^2   query, key, value and output projections
    4 B L^2 d   attention scores (Q K^T) and the weighted sum of values
    4 B L d f   the two feed-forward projections

plus, per family:
- bert, roberta: the pooler, 2 B d^2.
- xlnet (bidirectional, no memory): relative positions over 2L offsets are projected per layer,
  4 B L d^2, and scored against the queries, 4 B L^2 d.
- transfo-xl: every call without memory starts from ``mem_len`` zero memories, so keys and values
  span K = L + mem_len: the layer projects queries, keys and values over K, 6 B K d^2, positions
  over K once, 2 K d^2, scores content and positions, 4 B L K d, weighs values, 2 B L K d, and
  projects the output, 2 B L d^2 (adaptive-embedding projections left out, under 1%).

A training step (training_flops) is counted as three forward passes (the backward pass costs
about two: gradients for activations and for weights) of the model with its language-modelling
head, whose output projection adds 2 B L d V (V the vocabulary).

tests/test_flops.py checks these against torch's own counter on real models of each family.
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
}


def forward_flops(spec, batch, length):
    """FLOPs of one forward pass of ``spec``'s base model on a batch x length input."""
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
    if spec.family in ("bert", "roberta"):
        total += 2 * b * d * d
    return total


def training_flops(spec, batch, length):
    """FLOPs of one training step: 3 x (forward + the language-modelling head's projection)."""
    hidden_key = DIMENSIONS[spec.family][0]
    head = 2.0 * batch * length * float(spec.architecture[hidden_key]) * \
        float(spec.architecture["vocab_size"])
    return 3.0 * (forward_flops(spec, batch, length) + head)


def point_flops(spec, task, batch, length):
    """The FLOPs of one call of a point: a forward pass (inference) or a training step."""
    if task == "training":
        return training_flops(spec, batch, length)
    return forward_flops(spec, batch, length)


def achieved_gflops(flops, milliseconds):
    """GFLOP/s of a point from its FLOPs and its reported time per call."""
    if not flops or not milliseconds:
        return None
    return flops / (milliseconds / 1000.0) / 1e9
