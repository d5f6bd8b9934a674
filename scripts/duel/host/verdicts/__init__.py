"""Who is faster and how sure: PyTorch and TensorFlow rows paired, their ratios, bootstrap
intervals, and the judge that calls a comparison clear or not."""
