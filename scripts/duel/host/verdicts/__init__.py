"""Who is faster and how sure: PyTorch and TensorFlow rows paired, their ratios, intervals,
the judge that calls a comparison clear or not, and the verdicts still open after a run's first
rounds."""
