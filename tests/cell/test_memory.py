"""The per-point peak memory probe sees a real allocation, and forgets it at the next point."""
import numpy as np
import pytest

from duel.cell.memory import PeakRssProbe, current_rss_mib

pytestmark = pytest.mark.unit


def test_peak_of_a_point_includes_a_freed_allocation_and_resets_for_the_next():
    baseline = current_rss_mib()
    probe = PeakRssProbe().start()
    assert probe.method == "vmhwm-reset"  # Linux with a writable /proc/self/clear_refs
    block = np.ones(300 * 1024 * 1024 // 8)  # 300 MiB, every page touched
    del block
    first = probe.peak_mib()
    assert first - baseline >= 290

    probe = PeakRssProbe().start()
    small = np.ones(10 * 1024 * 1024 // 8)
    second = probe.peak_mib()
    del small
    assert second < first - 250  # the earlier spike is not carried into this point
    assert second >= baseline
