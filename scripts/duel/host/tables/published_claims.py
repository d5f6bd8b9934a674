"""What the studies this project rebuilds or answers published: one claim a row, each held
against the same era, task and modes here (verdicts/timeline.py ``claims``).

A claim names the era that rebuilds its stack, or none where no era does (Hugging Face's July
2022 XLA generation, transformers 4.21): then every era of the run that generated is held to
it, and the row says which versions and device differ from the study's.
"""
from collections import namedtuple

from duel.host.tables.published_2019 import HARDWARE_2019, SOURCE_2019

# ``kind`` frameworks: PyTorch mode vs TensorFlow mode (``modes``), ``faster`` the framework the
# claim says is faster; kind modes: ``modes`` = (framework, graph mode), claimed faster than
# eager. ``models``: the models held (all where empty); ``device``: where the study measured;
# ``versions``: its stack in words.
Claim = namedtuple("Claim", "source era claim published hardware kind modes models task "
                            "faster device versions")

SOURCE_2021 = ("Hugging Face, Scaling up BERT-like model inference on modern CPU, part 1 "
               "(April 2021)")
SOURCE_2022 = "Hugging Face, Faster Text Generation with TensorFlow and XLA (July 2022)"
HARDWARE_2022 = "a GPU (the post's benchmarks)"
VERSIONS_2022 = "transformers 4.21 (the first with XLA generation)"

CLAIMS = [
    Claim(SOURCE_2019, "hf2019", "On CPU, TensorFlow is usually somewhat slower than PyTorch",
          "all-model average per call: PyTorch 0.748 s, TensorFlow 0.823 s (0.91)",
          HARDWARE_2019["cpu"], "frameworks", ("eager", "function"), (), "inference",
          "pytorch", "cpu", "torch 1.3, TensorFlow 2.0, transformers 2.1.1"),
    Claim(SOURCE_2019, "hf2019", "Traced TorchScript is about 20% faster than the same untraced "
          "model on average, strongly dependent on model and input size",
          "about 1.2x on average", HARDWARE_2019["cpu"], "modes", ("pytorch", "torchscript"),
          (), "inference", "torchscript", "cpu",
          "torch 1.3, TensorFlow 2.0, transformers 2.1.1"),
    Claim(SOURCE_2021, "hf2021", "Out of the box, PyTorch 1.8.1 is faster than TensorFlow "
          "2.4.1 on BERT", "PyTorch faster than TensorFlow out of the box on BERT (the study's "
          "latency figures)", "a many-core Intel Xeon server (the study's)",
          "frameworks", ("eager", "function"), ("bert-base-cased", "bert-base-uncased"),
          "inference", "pytorch", "cpu", "torch 1.8.1, TensorFlow 2.4.1, transformers 4.5.1"),
    Claim(SOURCE_2022, None, "TensorFlow generation compiled with XLA is up to 100x faster "
          "than TensorFlow eager generation", "up to 100x (TensorFlow xla over eager)",
          HARDWARE_2022, "modes", ("tensorflow", "xla"), (), "generation", "xla", "cuda",
          VERSIONS_2022),
    Claim(SOURCE_2022, None, "TensorFlow generation compiled with XLA is faster than PyTorch",
          "faster than PyTorch (TensorFlow xla against PyTorch eager)", HARDWARE_2022,
          "frameworks", ("eager", "xla"), (), "generation", "tensorflow", "cuda",
          VERSIONS_2022),
]
