"""Duel: a reproducible PyTorch vs TensorFlow transformer benchmark.

``duel.cell`` runs inside an era's environment (Python 3.6+, stdlib, numpy, pyarrow, the
framework under test, transformers); ``duel.host`` runs in the workflow's own environment.
"""
