"""Peak host memory of one point: the kernel's own high-water mark of this process's RSS.

How it is measured (docs/method.md in short): Linux keeps the peak resident set size of a process
(``VmHWM`` in /proc/self/status), and writing ``5`` to /proc/self/clear_refs resets that peak to
the current RSS (Linux >= 4.0). The probe resets it when a point starts and reads it when the point
ends, so the figure is the true peak of the whole process during that point, warm-up and timing
included: every page the kernel counted (framework allocator pools, thread stacks, the model's
weights), with no sampling interval to miss a spike and no cost inside the timed calls.

Where the reset is not possible (another OS, a locked-down /proc), the probe falls back to
``getrusage``'s ``ru_maxrss``: the peak of the whole process life so far, an upper bound for the
point. The column ``peak_host_rss_method`` says which one a row used.
"""
import resource
import sys

MIB = 1024.0 * 1024.0
CLEAR_REFS = "/proc/self/clear_refs"
STATUS = "/proc/self/status"


def _read_status_kib(field):
    with open(STATUS) as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def current_rss_mib():
    """This process's resident set size now, in MiB (Linux), or None where /proc is absent."""
    try:
        return _read_status_kib("VmRSS") / 1024.0
    except (IOError, OSError, KeyError):
        return None


class PeakRssProbe(object):
    """Measures the peak RSS of this process between ``start()`` and ``peak_mib()``."""

    def __init__(self):
        self.method = None

    def start(self):
        """Reset the kernel's high-water mark; remember which method this point uses."""
        try:
            with open(CLEAR_REFS, "w") as clear_refs:
                clear_refs.write("5")
            _read_status_kib("VmHWM")
            self.method = "vmhwm-reset"
        except (IOError, OSError, KeyError):
            self.method = "ru_maxrss-lifetime"
        return self

    def peak_mib(self):
        """Peak RSS since ``start()`` (exact), or the lifetime peak (fallback), in MiB."""
        if self.method == "vmhwm-reset":
            return _read_status_kib("VmHWM") / 1024.0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # Linux reports KiB, macOS bytes.
        return peak / MIB if sys.platform == "darwin" else peak / 1024.0
