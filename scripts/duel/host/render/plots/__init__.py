"""Charts of a run, drawn from the merged table alone (matplotlib, each as PNG and SVG).

Every chart says in its title what it shows and where it was measured (era and versions,
device, precision, task, method, hardware and threads), puts units on its axes, and marks a
point that has no value where the value would be (N/A: skipped; OOM; error), so nothing is
silently missing. One folder per kind, one figure per scope (era x device x precision x task x
method), a panel per model:

- ``ratio``: at a glance, PyTorch / TensorFlow time per model and point, coloured by who is
  faster, bold where that is clear, with '=' where the two are equivalent and '?' where it is
  undecided (statistics.py's decisions);
- ``frameworks``: the 2019 article's charts, time per call of every framework and mode side by
  side, grouped by batch size and length, with the interval of each figure as an error bar;
- ``length``: time per call against sequence length, a line per framework, mode and batch size;
- ``modes``: speed-up of each graph mode over its framework's eager mode;
- ``eras``: the eras side by side (oldest first) on the same cell and point;
- ``timeline``: each framework-mode's figure per point against the eras' dates;
- ``memory``: peak memory of each point against sequence length;
- ``gflops``: achieved GFLOP/s against sequence length;
- ``deployment``: each framework's C/C++ runner beside the Python runs of the same graph (the
  same artifact loaded in Python, and the graph mode it was exported from), both frameworks
  side by side;
- ``generation``: task generation's PyTorch / TensorFlow time to first token and per output
  token per model and point, a marker per pair of modes, with its interval, on a log scale.

A kind that this run cannot show (no graph mode, one era only) gets one figure that says why.

A module per family: times (frameworks, length, deployment), measures (modes, memory, gflops,
noise), over_eras (eras, timeline), ratio, text_generation (generation); base holds what they share (style, panels, bars and
lines, gap marks) and draw draws every kind (chart_kinds.py names them).
"""
