"""How long a point can take at most: one pessimistic estimate, for a cluster job's walltime
(host/plan/resources.py) and for a point's time limit in its measuring process.

Per point a fixed allowance (input, trace or compile, first call, output check) plus every call
the method makes, each call at a pessimistic rate (analytic FLOPs at a few GFLOP/s per core, plus
a fixed cost per call that covers eager overheads on small inputs). Python 3.6-compatible.
"""

POINT_S = 60.0  # input, trace or compile, first call, output check
CALL_S = 0.5  # the fixed cost of one call (eager overheads dominate small points)
GFLOPS_PER_CORE = 4.0  # about a quarter of what a CPU core reached here on mid-size points
# A call whose FLOPs are not counted (flops.not_counted): an allowance, not a count, as long as
# a BERT-base forward pass of 4 x 512 tokens on one core at the rate above.
UNCOUNTED_CALL_S = 100.0


def call_seconds(call_flops, threads):
    """A pessimistic duration of one call (s): a forward pass, or a training step; a fixed
    allowance where its FLOPs are not counted (None)."""
    if call_flops is None:
        return CALL_S + UNCOUNTED_CALL_S / max(1, threads)
    return CALL_S + call_flops / (GFLOPS_PER_CORE * 1e9 * max(1, threads))


def point_seconds(call_s, method, duel, timeit):
    """The longest a point can take: its calls (warm-up, timed, output check) and its allowance."""
    if method == "timeit":
        calls = 1 + timeit["repeat"] * timeit["number"] + 1
        return POINT_S + calls * call_s
    timed = min(duel["max_time_s"], duel["max_samples"] * call_s) + call_s
    return POINT_S + (duel["warmup_calls"] + 2) * call_s + timed
