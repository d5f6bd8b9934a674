"""PyTorch adapter: eager mode on the CPU.

``duel`` runs the timed calls under ``torch.no_grad()`` (available in every era, so the eras stay
comparable); ``hf2019`` calls the model in eval mode without it, as the 2019 script did.
"""
import torch

from .. import compat
from ..models import FAMILIES
from .base import Adapter


class PyTorchAdapter(Adapter):
    framework = "pytorch"
    modes = ("eager",)

    def __init__(self, mode, device, threads):
        super(PyTorchAdapter, self).__init__(mode, device, threads)
        torch.set_num_threads(threads)

    def environment(self):
        return {
            "framework_version": torch.__version__,
            "transformers_version": compat.transformers_version(),
            "cuda": None,
            "cudnn": None,
            "device_name": "cpu",
        }

    def build(self, spec, seed):
        family = FAMILIES[spec.family]
        torch.manual_seed(seed)
        config = compat.build_config(family.config_class, spec.family, spec.architecture)
        self.model = compat.model_class(family.pytorch_class)(config)
        self.model.eval()

    def inputs(self, token_ids):
        return torch.tensor(token_ids, dtype=torch.long)

    def call_for(self, method, inputs):
        model = self.model
        return lambda: model(inputs)

    def inference_context(self, method):
        if method == "hf2019":
            return super(PyTorchAdapter, self).inference_context(method)
        return torch.no_grad()
