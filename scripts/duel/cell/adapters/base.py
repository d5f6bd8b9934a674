"""The interface both framework adapters implement, and the parts they share.

An adapter owns everything framework-specific about a cell: thread settings, building the model
from its spec with seeded weights, turning token ids into the framework's tensor, the call that
one timed sample makes, the device barrier, and telling an out-of-memory error from another.
The timing core, the memory probe and the shard writer never see a framework.

Devices: ``cpu`` and ``cuda`` (the first GPU). A cuda cell synchronises the device before every
clock read of the ``duel`` method (``synchronise``), and measures the framework allocator's peak
per point (``reset_device_peak`` / ``device_peak_mib``); ``timeit`` never synchronises, as in 2019.
Precisions: ``fp32`` (default), ``fp16`` and ``bf16`` as mixed precision, each framework's own way
(PyTorch autocast, Keras mixed-precision policies; the 2019 stack's switches where it had them);
what a framework, era or device cannot run is a skipped cell with the reason.
Tasks: ``inference`` (a forward pass), ``training`` (one optimiser step of the model with its
language-modelling head: forward, loss, backward, update; see ``training_step``) and
``generation`` (transformers' ``generate`` of the causal language model, greedy, with its
key/value cache; see ``generate_call``).
"""
import contextlib
import gc

from .. import compat, frameworks, models, modes, reference


def entered(contexts):
    """One context made of ``contexts``, entered in order (and left in reverse)."""
    stack = contextlib.ExitStack()
    for context in contexts:
        stack.enter_context(context)
    return stack


def no_gpu_name(device):
    """The device name of a cell that has no GPU to name: 'cpu', or None for a cuda cell
    that found none (its rows are errors saying so)."""
    return "cpu" if device == "cpu" else None


class Adapter(object):
    """Base of the PyTorch and TensorFlow adapters (same shape, side by side)."""

    framework = None
    modes = ()
    devices = ("cpu", "cuda")
    precisions = ("fp32", "fp16", "bf16")
    out_of_memory_words = ("out of memory", "can't allocate memory", "cannot allocate memory")
    def __init__(self, mode, device, precision, threads, task="inference", tf32=False):
        for kind, value, known in (("mode", mode, self.modes), ("device", device, self.devices),
                                   ("precision", precision, self.precisions)):
            if value not in known:
                raise ValueError("%s has no %s %r (%ss: %s)"
                                 % (self.framework, kind, value, kind, ", ".join(known)))
        self.mode = mode
        self.device = device
        self.precision = precision
        self.threads = threads
        self.task = task
        self.tf32 = tf32
        self.model = None
        self.fresh = False  # built and not yet trained: a training point can start from it

    def environment(self):
        """Framework-specific environment columns."""
        raise NotImplementedError

    def set_tf32(self, enabled):
        """Let fp32 matrix products (and convolutions) run in TF32 on Ampere and newer GPUs
        (``enabled``), or keep them strict fp32, through the framework's own switches where it
        has them. Every adapter calls it in its constructor, so strict fp32 is the default on
        both sides (TensorFlow's own default is TF32 on, PyTorch's matmul default off)."""
        raise NotImplementedError

    def tf32_flags(self):
        """{switch: its value, read back from the framework now}; empty where it has none."""
        return {}

    def tf32_state(self):
        """The ``tf32`` column: 'on' or 'off' as the framework reports its switches, 'n/a' on a
        CPU and where the framework has no such switch (the 2019 stack)."""
        flags = self.tf32_flags()
        if self.device == "cpu" or not flags:
            return "n/a"
        values = set(bool(value) for value in flags.values())
        if len(values) > 1:
            return "mixed: " + ", ".join("%s=%s" % item for item in sorted(flags.items()))
        return "on" if values.pop() else "off"

    def check_precision(self):
        """The precision whose tolerance the output check applies: TF32 rounds fp32 matrix
        products to fp16's 10-bit mantissa, so fp32 with TF32 on is checked as 'tf32'."""
        if self.precision == "fp32" and self.tf32_state() == "on":
            return "tf32"
        return self.precision

    def unsupported_reason(self, spec):
        """Why this cell cannot run ``spec`` in this era, or None (then it runs)."""
        if self.task == "training" and self.precision == "fp16":
            return ("fp16 training needs loss scaling, which Duel does not implement; bf16 "
                    "trains without it")
        return (self.model_unsupported(spec) or self.generation_unsupported()
                or self.mode_unsupported(spec) or self.precision_unsupported())

    def model_unsupported(self, spec):
        """Why this era's transformers cannot build ``spec`` in this framework for this task (it
        has no class for its model type: an older release), or None."""
        return models.missing(spec, self.framework, self.task)

    def generation_unsupported(self):
        """Why this cell's mode does not generate (a generation cell), or None."""
        generation_modes = modes.generating(self.framework)
        if self.task != "generation" or self.mode in generation_modes:
            return None
        return "%s mode %s does not run generate (generation modes: %s)" % (
            frameworks.label(self.framework), self.mode, ", ".join(generation_modes))

    def weights_folder(self, weights_dir):
        """Where the shared weights of this task lie (reference.py)."""
        return reference.weights_folder(weights_dir, self.framework, self.task)

    def generate_call(self, inputs, new_tokens):
        """A zero-argument callable: greedy generation of exactly ``new_tokens`` tokens after
        ``inputs`` (the prompt), key/value cache on (compat.generate_arguments)."""
        raise NotImplementedError

    def first_token_call(self, inputs, new_tokens):
        """A zero-argument callable that generates the first token after ``inputs`` alone (the
        prefill), as ``generate_call(inputs, new_tokens)`` does its first step."""
        return self.generate_call(inputs, 1)

    def generated_tokens(self, output, prompt_length):
        """The new token ids of a ``generate_call`` output, a numpy array (batch x new)."""
        raise NotImplementedError

    def training_step(self, inputs, learning_rate):
        """A zero-argument callable: one optimiser step on ``inputs`` (labels: the inputs
        themselves, each token predicted at its own position), returning the loss. A fresh
        optimiser (Adam, no weight decay, default betas and epsilon) per point."""
        raise NotImplementedError

    def evaluation_loss(self, inputs):
        """The loss on ``inputs`` without dropout or any update, as a float: the same quantity
        before and after a point's steps, so that a falling loss means training worked."""
        raise NotImplementedError

    def mode_unsupported(self, spec):
        """Why this cell's mode cannot run ``spec`` in this era, or None."""
        return None

    def precision_unsupported(self):
        """Why this cell's precision cannot run on its device in this era, or None."""
        return None

    def require_device(self):
        """Raise unless the cell's device is there (a cuda cell on a machine or build without
        CUDA fails loudly instead of quietly timing the CPU)."""
        return None

    def build(self, spec, seed, weights_dir=None):
        """Load the shared weights from ``weights_dir`` (see reference.py), or, without one,
        build ``spec``'s model from its architecture with weights seeded by ``seed``."""
        raise NotImplementedError

    def build_alike(self):
        """What besides the spec and weights decides the model ``build`` makes: the modes of one
        process with equal keys share one model (sweep.build), so the process holds it once, as
        a process of one mode would; None: never shared (training changes its model's weights)."""
        if self.task == "training":
            return None
        return (self.framework, self.device, self.precision, self.task)

    def adopt(self, model):
        """Take ``model``, built by another mode's adapter of this process with the same
        ``build_alike``, as ``build`` would have left it."""
        self.model = model
        self.fresh = True

    def to_numpy(self, tensor):
        """A framework tensor as a numpy array (for the output check)."""
        raise NotImplementedError

    def inputs(self, token_ids):
        """The framework tensor for a numpy array of token ids, shape (batch, length)."""
        raise NotImplementedError

    def call_for(self, method, inputs):
        """A zero-argument callable that runs one forward pass, as ``method`` prescribes."""
        raise NotImplementedError

    def inference_context(self, method):
        """The context the timed calls run in: ``contexts(method)`` entered together."""
        return entered(self.contexts(method))

    def contexts(self, method):
        """The contexts of a timed call (e.g. no autograd for ``duel``, autocast)."""
        return []

    def synchronise(self):
        """Wait until the device has finished all queued work (no-op on the CPU)."""
        return None

    def reset_device_peak(self):
        """Start a new peak of device memory (no-op on the CPU)."""
        return None

    def device_peak_mib(self):
        """The device memory peak since ``reset_device_peak`` (MiB), None on the CPU."""
        return None

    device_peak_method = None

    def is_out_of_memory(self, error):
        """Whether ``error`` means the point did not fit in memory."""
        if isinstance(error, MemoryError):
            return True
        text = str(error).lower()
        return any(word in text for word in self.out_of_memory_words)

    def last_hidden_state(self, outputs):
        """The final hidden state of a forward pass, whatever the era's output type."""
        return compat.last_hidden_state(outputs)

    def begin_point(self):
        """Prepare a new point before its input is made (e.g. a fresh compiled graph)."""
        return None

    def graph_columns(self):
        """The point's graph columns (contract.GRAPH), read once its timed calls are done;
        empty where the mode compiles nothing that could be counted."""
        return {}

    def graph_problem(self, columns):
        """Why the point's timed calls did not run the graph its mode names (``columns`` from
        graph_columns), or None: such a point is an error, never a number under a wrong name."""
        return None

    def release_point(self):
        """Drop what one point left behind before the next point starts."""
        gc.collect()

    # Deployment modes (deployed*.py) hook in here; every other adapter keeps these defaults.
    times_itself = False  # True: ``time_point`` runs the duel method elsewhere (a C++ runner)

    def time_point(self, inputs, settings):
        """The duel Measurement of one point, timed outside this process."""
        raise NotImplementedError

    def point_unsupported(self, point):
        """Why this cell cannot run ``point`` (e.g. its timing method), or None."""
        if self.task == "generation" and point.method != "duel":
            return ("method %s times one call of the 2019 kind; generation is timed by duel "
                    "(first token and whole call)" % point.method)
        return None

    def point_columns(self, columns):
        """Extra contract columns of a measured point (given the timing columns)."""
        return {}
