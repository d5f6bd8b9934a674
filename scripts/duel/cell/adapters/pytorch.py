"""PyTorch adapter: eager, TorchScript (trace per input shape, as 2019) and torch.compile.

``duel`` runs the timed calls under ``torch.no_grad()`` (available in every era, so the eras stay
comparable); ``timeit`` calls the model in eval mode without it, as the 2019 script did.
- ``torchscript``: the model is built with ``config.torchscript = True`` and traced with
  ``torch.jit.trace`` on each point's input (one trace per shape, as 2019), inside the same
  contexts as the timed calls (autocast included, without its weight cache, which a trace would
  freeze as constants); the trace is the point's ``setup_s``.
  Transfo-XL cannot be traced (it could not in 2019 either).
- ``compile``: ``torch.compile(model, dynamic=False)`` afresh for every point, after
  ``torch._dynamo.reset()`` (default inductor backend): each point gets a static graph of its own
  shape, compiled in its first call (``first_call_ms``, never a sample), as TorchScript traces
  and tf.function retraces per shape, and Dynamo's recompile limit (per code object) is never
  reached however long the grid (it raises rather than falling back to eager, where torch has
  ``fail_on_recompile_limit_hit``). Each point records the graphs Dynamo compiled
  (``compiles``), those compiled after the first call (``recompiles``) and its graph breaks
  (``graph_breaks``), from ``torch._dynamo.utils.counters``; a point that compiled no graph (its
  calls ran eagerly) or recompiled during its timed calls is an ``error``.
  Generation: generate compiles its decoding steps itself, over a static key/value cache
  (``cache_implementation="static"`` with a ``CompileConfig``: fullgraph, static shapes,
  transformers' default mode, CUDA graphs on a GPU), the way transformers 4.57 documents and
  runs it; the prefill stays eager, as transformers keeps it (its shape is the prompt's), so the
  first token is eager's and the tokens after it are compiled. On a CPU, where generate compiles
  only when asked, ``CompileConfig._compile_all_devices`` asks. A class without a static cache
  is a skipped point (compat.compiled_generation_unsupported).
Precision: fp16/bf16 run under ``torch.autocast`` (weights stay fp32, matrix products in the low
precision). torch 1.3 has no autocast; there fp16 is 2019's ``--fp16``, ``model.half()``, on CUDA.
TF32: ``torch.backends.cuda.matmul.allow_tf32`` and ``torch.backends.cudnn.allow_tf32``, both
set from the cell's ``tf32`` (default off: strict fp32).
CUDA: ``torch.cuda.synchronize()`` is the barrier; the device peak is the caching allocator's
``max_memory_allocated``, reset per point.
"""
import torch

from .. import builds, compat, models, reference
from ..modes import IN_PYTHON, mode_names
from .base import Adapter, entered, no_gpu_name

NO_TRACE_FAMILIES = {
    "transfo-xl": "Transfo-XL cannot be traced with TorchScript (its memory and adaptive "
                  "embeddings are Python control flow; the 2019 study skipped it too)",
}
DTYPES = {"fp16": torch.float16, "bf16": getattr(torch, "bfloat16", None)}
HAS_AUTOCAST = hasattr(torch, "autocast")


class PyTorchAdapter(Adapter):
    framework = "pytorch"
    modes = mode_names("pytorch", IN_PYTHON)

    def __init__(self, mode, device, precision, threads, task="inference", tf32=False):
        super(PyTorchAdapter, self).__init__(mode, device, precision, threads, task, tf32)
        torch.set_num_threads(threads)
        compat.set_interop_threads(torch, threads)
        self.set_tf32(tf32)
        self._compiled = None
        self._recompiled = 0  # mode compile: graphs compiled by a call that was not its first
        self._half = precision == "fp16" and not HAS_AUTOCAST  # 2019's --fp16

    def _cuda(self):
        return self.device == "cuda" and torch.cuda.is_available()

    def environment(self):
        cuda = self._cuda()
        return {
            "framework_version": torch.__version__,
            "framework_build": builds.pytorch(torch),
            "transformers_version": compat.transformers_version(),
            "cuda": torch.version.cuda,
            "cudnn": str(torch.backends.cudnn.version()) if cuda else None,
            "device_name": torch.cuda.get_device_name(0) if cuda else no_gpu_name(self.device),
            "tf32": self.tf32_state(),
        }

    def set_tf32(self, enabled):
        for _, owner in compat.torch_tf32_switches(torch):
            owner.allow_tf32 = bool(enabled)

    def tf32_flags(self):
        return dict((name, owner.allow_tf32) for name, owner in compat.torch_tf32_switches(torch))

    def mode_unsupported(self, spec):
        if self.mode == "torchscript":
            if self.task == "training":
                return "TorchScript traces inference: a traced model is not trained in Duel"
            return NO_TRACE_FAMILIES.get(spec.family)
        if self.mode == "compile":
            return compat.torch_compile_unsupported(torch) or (
                self.task == "generation"
                and compat.compiled_generation_unsupported(spec.family, self.framework)) or None
        return None

    def precision_unsupported(self):
        if self.precision == "fp32":
            return None
        if not HAS_AUTOCAST:
            if self.precision == "fp16" and self.device == "cuda":
                return None
            return ("torch %s has no autocast; its only reduced precision is model.half() "
                    "(fp16) on CUDA" % torch.__version__)
        if self.precision == "bf16" and self._cuda() and not torch.cuda.is_bf16_supported():
            return "this GPU (%s) has no bf16 support" % torch.cuda.get_device_name(0)
        return None

    def require_device(self):
        if self.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("device cuda asked for, but torch %s sees no CUDA device "
                               "(built for CUDA %s)" % (torch.__version__, torch.version.cuda))

    def build(self, spec, seed, weights_dir=None):
        self.require_device()
        torchscript = self.mode == "torchscript"
        if weights_dir:
            model_class = compat.model_class(models.class_name(spec, self.framework, self.task))
            self.model = model_class.from_pretrained(self.weights_folder(weights_dir),
                                                     torchscript=torchscript)
        else:
            self.model = models.build_pytorch(spec, self.task, seed, torchscript)
        if self._half:
            self.model.half()
        self.model.to(torch.device(self.device))
        self.model.train(self.task == "training")
        self._compiled = None  # compiled per point (begin_point)
        self.fresh = True

    def build_alike(self):
        alike = Adapter.build_alike(self)  # torchscript builds with a config flag of its own
        return alike and alike + (self.mode == "torchscript",)

    def adopt(self, model):
        Adapter.adopt(self, model)
        self._compiled = None

    def begin_point(self):
        if self.mode != "compile":
            return
        from torch._dynamo import config, utils
        torch._dynamo.reset()  # a fresh cache and recompile count per point
        utils.counters.clear()
        if hasattr(config, "fail_on_recompile_limit_hit"):
            config.fail_on_recompile_limit_hit = True
        self._recompiled = 0
        if self.task != "generation":  # generate compiles its own (generate_call)
            self._compiled = torch.compile(self.model, dynamic=False)

    def _graphs_so_far(self):
        from torch._dynamo import utils
        return int(utils.counters["stats"]["unique_graphs"])

    def _counted(self, call):
        """``call``, a compiled call of the point: the graphs compiled by any of its calls but
        its first are recompiles (graph_columns)."""
        calls = []

        def counted():
            before = self._graphs_so_far()
            output = call()
            if calls:
                self._recompiled += self._graphs_so_far() - before
            calls.append(None)
            return output
        return counted

    def graph_columns(self):
        if self.mode != "compile":
            return {}
        from torch._dynamo import utils
        return {"compiles": self._graphs_so_far(), "recompiles": self._recompiled,
                "graph_breaks": int(sum(utils.counters["graph_break"].values()))}

    def graph_problem(self, columns):
        if self.mode != "compile":
            return None
        if not columns.get("compiles"):
            return ("torch.compile compiled no graph for this point: its calls ran eagerly "
                    "(Dynamo disabled, or fell back), so they are not compile timings")
        if columns.get("recompiles"):
            return ("torch.compile recompiled %d graph(s) after the point's first call: its "
                    "timed calls did not all run one compiled graph" % columns["recompiles"])
        return None

    def inputs(self, token_ids):
        return torch.tensor(token_ids, dtype=torch.long, device=torch.device(self.device))

    def to_numpy(self, tensor):
        return tensor.detach().float().cpu().numpy()

    def call_for(self, method, inputs):
        model = self.model
        if self.mode == "torchscript":
            with self.inference_context(method):
                model = compat.jit_trace(torch, model, inputs)
        elif self.mode == "compile":
            compiled = self._compiled
            return self._counted(lambda: compiled(inputs))
        return lambda: model(inputs)

    def generate_call(self, inputs, new_tokens):
        model, mask = self.model, torch.ones_like(inputs)
        kwargs = compat.generate_arguments(inputs.shape[1], new_tokens,
                                           reference.pad_token(model.config))
        if self.mode != "compile":
            return lambda: model.generate(inputs, attention_mask=mask, **kwargs)
        from transformers import CompileConfig
        compile_config = CompileConfig(fullgraph=True, dynamic=False)
        compile_config._compile_all_devices = self.device == "cpu" or None
        kwargs.update(cache_implementation="static", compile_config=compile_config)
        return self._counted(lambda: model.generate(inputs, attention_mask=mask, **kwargs))

    def generated_tokens(self, output, prompt_length):
        return output[:, prompt_length:].cpu().numpy()

    def _autocast(self):
        """Autocast to the cell's precision, or nothing (fp32, or 2019's model.half())."""
        if self.precision == "fp32" or self._half:
            return []
        # A trace must not capture autocast's cached low-precision weight copies.
        options = {"cache_enabled": False} if self.mode == "torchscript" else {}
        return [torch.autocast(self.device, dtype=DTYPES[self.precision], **options)]

    def _loss(self, inputs):
        """Cross-entropy of the model's predictions for each input token at its position."""
        model = self.model if self._compiled is None else self._compiled
        logits = model(inputs)[0]
        return torch.nn.functional.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]), inputs.reshape(-1))

    def training_step(self, inputs, learning_rate):
        optimizer = torch.optim.Adam(self.model.parameters(), lr=learning_rate)
        autocast = self._autocast()

        def step():
            optimizer.zero_grad()
            with entered(autocast):
                loss = self._loss(inputs)
            loss.backward()
            optimizer.step()
            return loss
        if self.mode == "compile":
            return self._counted(step)
        return step

    def evaluation_loss(self, inputs):
        self.model.eval()
        try:
            with entered([torch.no_grad()] + self._autocast()):
                return float(self._loss(inputs))
        finally:
            self.model.train(self.task == "training")

    def contexts(self, method):
        if self.task == "training":
            return []  # the step enters autocast for its forward pass itself
        return ([] if method == "timeit" else [torch.no_grad()]) + self._autocast()

    def synchronise(self):
        if self.device == "cuda":
            torch.cuda.synchronize()

    def reset_device_peak(self):
        if self.device == "cuda":
            reset = getattr(torch.cuda, "reset_peak_memory_stats",
                            getattr(torch.cuda, "reset_max_memory_allocated", None))
            reset()

    def device_peak_mib(self):
        if self.device != "cuda":
            return None
        return torch.cuda.max_memory_allocated() / 2.0 ** 20

    @property
    def device_peak_method(self):
        if self.device == "cuda":
            return "torch.cuda.max_memory_allocated, reset per point"
        return None

    def is_out_of_memory(self, error):
        out_of_memory = getattr(torch.cuda, "OutOfMemoryError", None)
        if out_of_memory is not None and isinstance(error, out_of_memory):
            return True
        return super(PyTorchAdapter, self).is_out_of_memory(error)

    def release_point(self):
        if self.model is not None and self.task == "generation":
            for name in ("_cache", "_compiled_call"):  # what generate keeps on the model
                self.model.__dict__.pop(name, None)
        super(PyTorchAdapter, self).release_point()
        if self._cuda():
            torch.cuda.empty_cache()
