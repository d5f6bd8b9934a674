"""Every kind of chart of a run drawn into its folder, each as PNG and SVG; a kind this run
cannot show gets one figure that says why."""
import os

import matplotlib

matplotlib.use("Agg")

from matplotlib import pyplot as plt  # noqa: E402

from duel.host.render.plots.base import STYLE, _placeholder, _save  # noqa: E402
from duel.host.render.plots.measures import (  # noqa: E402
    gflops_charts, memory_charts, modes_charts, noise_charts)
from duel.host.render.plots.over_eras import eras_charts, timeline_charts  # noqa: E402
from duel.host.render.plots.ratio import ratio_charts  # noqa: E402
from duel.host.render.plots.text_generation import generation_charts  # noqa: E402
from duel.host.render.plots.times import (  # noqa: E402
    deployment_charts, frameworks_charts, length_charts)
from duel.host.tables import scopes  # noqa: E402

EMPTY = {
    "noise": ("One process per cell", "This run has one replicate per cell (config key "
              "replicates: 1): there is no spread between processes to show, and its intervals "
              "see only the jitter inside one process."),
    "ratio": ("No PyTorch / TensorFlow pair", "This run has no point that both PyTorch and "
              "TensorFlow ran in the same scope: nothing to compare."),
    "modes": ("No graph mode", "This run has no framework with both its eager mode and a graph "
              "mode (torchscript, compile, function, xla): no speed-up to show."),
    "deployment": ("No deployment mode", "This run has no C/C++ deployment mode (jitcpp, "
                   "savedcpp): add them to config key 'modes', beside jitpy / savedpy or "
                   "torchscript / function, to see what Python costs."),
    "eras": ("One era only", "This run has no cell in two eras: add e.g. "
             "'eras: [hf2019, current]' to compare the 2019 stack with today's."),
    "timeline": ("One era only", "This run has no cell in two eras: the timeline needs "
                 "several (config/timeline.yaml runs four)."),
    "generation": ("No text generation", "This run has no point of task generation that both "
                   "PyTorch and TensorFlow ran: add 'generation' to config key 'tasks' "
                   "(config/generation.yaml runs GPT-2 and DistilGPT-2)."),
}


def charts(kind, frame, ratios, merged=None):
    """(file stem, figure) pairs of one kind (``merged``: the merged table, which generation's
    charts read, its processes apart; ``frame``: its point table)."""
    if kind == "ratio":
        return ratio_charts(frame, ratios)
    if kind == "generation":
        return generation_charts(frame if merged is None else merged)
    return {
        "frameworks": frameworks_charts,
        "length": length_charts,
        "modes": modes_charts,
        "eras": eras_charts,
        "timeline": timeline_charts,
        "memory": memory_charts,
        "gflops": gflops_charts,
        "noise": noise_charts,
        "deployment": deployment_charts,
    }[kind](frame)


def draw_all(frame, ratios, folders):
    """Draw every kind into its folder (``folders``: kind -> folder); returns kind -> paths."""
    merged, frame = frame, scopes.prepared(frame)
    written = {}
    with plt.rc_context(STYLE):
        for kind, folder in folders.items():
            if not os.path.isdir(folder):
                os.makedirs(folder)
            paths = []
            for stem, figure in charts(kind, frame, ratios, merged):
                paths.extend(_save(figure, folder, stem))
            if not paths:
                title, text = EMPTY.get(kind, ("Nothing to draw", "This run has no rows."))
                paths = _placeholder(folder, "not-in-this-run", title, text)
            written[kind] = paths
    return written
