"""The interface both framework adapters implement, and the parts they share.

An adapter owns everything framework-specific about a cell: thread settings, building the model
from its spec with seeded weights, turning token ids into the framework's tensor, the call that
one timed sample makes, the device barrier, and telling an out-of-memory error from another.
The timing core, the memory probe and the shard writer never see a framework.
"""
import gc

from .. import compat


class _NoContext(object):
    """A context that does nothing (contextlib.nullcontext is Python 3.7+)."""

    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        return False


class Adapter(object):
    """Base of the PyTorch and TensorFlow adapters (same shape, side by side)."""

    framework = None
    modes = ()
    out_of_memory_words = ("out of memory", "can't allocate memory", "cannot allocate memory")

    def __init__(self, mode, device, threads):
        if mode not in self.modes:
            raise ValueError(
                "%s has no mode %r (modes: %s)" % (self.framework, mode, ", ".join(self.modes))
            )
        if device != "cpu":
            raise ValueError("device %r is not supported by this adapter yet" % device)
        self.mode = mode
        self.device = device
        self.threads = threads
        self.model = None

    def environment(self):
        """Framework-specific environment columns."""
        raise NotImplementedError

    def unsupported_reason(self, spec):
        """Why this cell's mode cannot run ``spec`` in this era, or None (then it runs)."""
        return None

    def build(self, spec, seed, weights_dir=None):
        """Load the shared weights from ``weights_dir`` (see reference.py), or, without one,
        build ``spec``'s model from its architecture with weights seeded by ``seed``."""
        raise NotImplementedError

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
        """The context the timed calls run in (e.g. no autograd for ``duel``)."""
        return _NoContext()

    def synchronise(self):
        """Wait until the device has finished all queued work (no-op on the CPU)."""
        return None

    def is_out_of_memory(self, error):
        """Whether ``error`` means the point did not fit in memory."""
        if isinstance(error, MemoryError):
            return True
        text = str(error).lower()
        return any(word in text for word in self.out_of_memory_words)

    def last_hidden_state(self, outputs):
        """The final hidden state of a forward pass, whatever the era's output type."""
        return compat.last_hidden_state(outputs)

    def release_point(self):
        """Drop what one point left behind before the next point starts."""
        gc.collect()
