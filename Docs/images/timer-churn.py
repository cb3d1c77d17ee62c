#!/usr/bin/env python3
"""Draws Docs/RunLoopGuide.docc/Resources/timer-churn.svg from a runloop-bench JSON file
(standard library only).

    swift build -c release --product runloop-bench
    .build/release/runloop-bench --suite timer-churn --json /tmp/churn.json
    python3 Docs/images/timer-churn.py /tmp/churn.json \
        Docs/RunLoopGuide.docc/Resources/timer-churn.svg

Both axes are logarithmic: a line of slope 1 is linear growth, slope 2 quadratic.
"""
import json
import math
import sys

source, target = sys.argv[1], sys.argv[2]
with open(source) as handle:
    document = json.load(handle)
points = []
for row in document["rows"]:
    if row["suite"] == "timer churn" and row["metric"].endswith("schedule+cancel"):
        count = int(row["metric"].split()[0])
        points.append((count, row["ours"], row["cf"]))
points.sort()
if not points:
    sys.exit("no timer churn rows in " + source)

width, height = 640, 420
left, right, top, bottom = 80, 150, 40, 60
plot_w, plot_h = width - left - right, height - top - bottom
xs = [p[0] for p in points]
ys = [v for p in points for v in p[1:] if v]
x_lo, x_hi = math.log10(min(xs)), math.log10(max(xs))
y_lo, y_hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))


def px(count):
    return left + (math.log10(count) - x_lo) / (x_hi - x_lo) * plot_w


def py(ms):
    return top + plot_h - (math.log10(ms) - y_lo) / (y_hi - y_lo) * plot_h


parts = [
    f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
    f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
    f'<rect width="{width}" height="{height}" fill="white"/>',
    f'<text x="{left + plot_w / 2}" y="22" text-anchor="middle" font-size="14">'
    "Timer churn: schedule then cancel n one-shot timers</text>",
]
for exponent in range(int(y_lo), int(y_hi) + 1):
    y = py(10**exponent)
    label = f"{10**exponent:g} ms"
    parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
    parts.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
for count in xs:
    x = px(count)
    parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="#eee"/>')
    parts.append(
        f'<text x="{x:.1f}" y="{top + plot_h + 18}" text-anchor="middle">{count:,}</text>')
parts.append(
    f'<text x="{left + plot_w / 2}" y="{height - 18}" text-anchor="middle">timers (n)</text>')
parts.append(
    f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>')
series = [("ours (EventRunLoop + LoopTimer)", 1, "#1f77b4"), ("CFRunLoop", 2, "#d62728")]
for index, (name, column, colour) in enumerate(series):
    coords = [(px(p[0]), py(p[column])) for p in points if p[column]]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
    for x, y in coords:
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>')
    ly = top + 20 + index * 20
    lx = left + plot_w + 12
    parts.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 18}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
    parts.append(f'<text x="{lx + 24}" y="{ly + 4}">{name.split(" (")[0]}</text>')
machine = document.get("machine", {})
note = f'{machine.get("cpu", "?")}, {machine.get("cores", "?")} cores, Linux {machine.get("kernel", "?")}'
parts.append(f'<text x="{left}" y="{height - 2}" font-size="10" fill="#666">{note}; log-log axes</text>')
parts.append("</svg>")
with open(target, "w") as handle:
    handle.write("\n".join(parts) + "\n")
print("wrote", target)
