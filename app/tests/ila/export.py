"""Writes an ILA capture with ChipScoPy's own ILAWaveform.export_waveform,
as Vivado's hardware manager and ChipScoPy save them, for app/tests/wave_ila.rs.

Usage: python3 export.py SPEC.json
SPEC: {"probes": [[name, width], ...], "window_size": W,
       "trigger_position": [t0, t1, ...], "samples": [[hex, ...], ...],
       "csv": path, "vcd": path}
Each sample lists its probes' values in hex, in probe order; samples past
the last window's end are absent (a partial last window).
"""
import json
import sys

from chipscopy.api.ila import ILABitRange
from chipscopy.api.ila.ila_waveform import ILAWaveform, ILAWaveformProbe


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    probes = {}
    bit = 0
    for name, width in spec["probes"]:
        probes[name] = ILAWaveformProbe(
            name=name,
            map=f"[{bit + width - 1}:{bit}]",
            map_range=[ILABitRange(bit, width)],
            is_bus=width > 1,
            bus_left_index=width - 1 if width > 1 else None,
            bus_right_index=0 if width > 1 else None,
        )
        bit += width
    width = bit
    window = spec["window_size"]
    triggers = spec["trigger_position"]
    samples = spec["samples"]
    bytes_per_sample = (width + 7) // 8
    wf = ILAWaveform(
        width=width,
        sample_count=len(samples),
        trigger_position=triggers,
        window_size=window,
        probes=probes,
        data=bytearray(bytes_per_sample * window * len(triggers)),
    )
    widths = [w for _, w in spec["probes"]]
    for s, values in enumerate(samples):
        word = 0
        shift = 0
        for v, w in zip(values, widths):
            word |= (int(v, 16) & ((1 << w) - 1)) << shift
            shift += w
        wf.set_sample(s, bytearray(word.to_bytes(bytes_per_sample, "little")))
    if spec.get("csv"):
        wf.export_waveform("CSV", spec["csv"])
    if spec.get("vcd"):
        wf.export_waveform("VCD", spec["vcd"])


if __name__ == "__main__":
    main()
