"""PyTorch adapter: eager, TorchScript (trace per input shape, as 2019) and torch.compile.

``duel`` runs the timed calls under ``torch.no_grad()`` (available in every era, so the eras stay
comparable); ``hf2019`` calls the model in eval mode without it, as the 2019 script did.
- ``torchscript``: the model is built with ``config.torchscript = True`` and traced with
  ``torch.jit.trace`` on each point's input (one trace per shape, as 2019); the trace is the
  point's ``setup_s``. Transfo-XL cannot be traced (it could not in 2019 either).
- ``compile``: ``torch.compile(model)`` once per cell (default inductor backend); compilation
  happens in each new shape's first call, so it lands in ``first_call_ms``, never in a sample.
"""
import os

import torch

from .. import compat
from ..models import FAMILIES
from .base import Adapter

NO_TRACE_FAMILIES = {
    "transfo-xl": "Transfo-XL cannot be traced with TorchScript (its memory and adaptive "
                  "embeddings are Python control flow; the 2019 study skipped it too)",
}


class PyTorchAdapter(Adapter):
    framework = "pytorch"
    modes = ("eager", "torchscript", "compile")

    def __init__(self, mode, device, threads):
        super(PyTorchAdapter, self).__init__(mode, device, threads)
        torch.set_num_threads(threads)
        self._compiled = None

    def environment(self):
        return {
            "framework_version": torch.__version__,
            "transformers_version": compat.transformers_version(),
            "cuda": None,
            "cudnn": None,
            "device_name": "cpu",
        }

    def unsupported_reason(self, spec):
        if self.mode == "torchscript":
            return NO_TRACE_FAMILIES.get(spec.family)
        if self.mode == "compile" and not hasattr(torch, "compile"):
            return "torch.compile does not exist in torch %s (it came with 2.0)" % torch.__version__
        return None

    def build(self, spec, seed, weights_dir=None):
        family = FAMILIES[spec.family]
        model_class = compat.model_class(family.pytorch_class)
        torchscript = self.mode == "torchscript"
        if weights_dir:
            self.model = model_class.from_pretrained(os.path.join(weights_dir, "pytorch"),
                                                     torchscript=torchscript)
        else:
            torch.manual_seed(seed)
            self.model = model_class(compat.build_config(
                family.config_class, spec.family, spec.architecture, torchscript=torchscript))
        self.model.eval()
        self._compiled = torch.compile(self.model) if self.mode == "compile" else None

    def inputs(self, token_ids):
        return torch.tensor(token_ids, dtype=torch.long)

    def to_numpy(self, tensor):
        return tensor.detach().cpu().numpy()

    def call_for(self, method, inputs):
        model = self.model
        if self.mode == "torchscript":
            if method == "hf2019":
                model = torch.jit.trace(model, inputs)
            else:
                with torch.no_grad():
                    model = torch.jit.trace(model, inputs)
        elif self.mode == "compile":
            model = self._compiled
        return lambda: model(inputs)

    def inference_context(self, method):
        if method == "hf2019":
            return super(PyTorchAdapter, self).inference_context(method)
        return torch.no_grad()
