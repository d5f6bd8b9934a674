"""The kinds of chart a run draws, and where each sits in the Snakemake report.

One list for the plotting code (plots/draw.py), the report rule's outputs and `rule all`
(rules/common.smk, rules/report.smk); it imports nothing, so planning stays fast.
"""

# kind -> the report's subcategory for it
SUBCATEGORIES = {
    "ratio": "Which framework is faster",
    "frameworks": "PyTorch vs TensorFlow per model",
    "length": "Time vs sequence length",
    "modes": "Graph modes vs eager",
    "eras": "The eras side by side",
    "timeline": "The eras by date",
    "memory": "Peak memory",
    "gflops": "Achieved GFLOP/s",
    "noise": "How much the processes differed",
    "deployment": "Deployed: Python vs C/C++",
    "generation": "Text generation: first token and per token",
}
KINDS = tuple(SUBCATEGORIES)
# Kinds shown at the top of the report; the others under Charts.
AT_A_GLANCE = ("ratio", "noise")
