"""Figures: matplotlib (Agg), each a function of read data that returns PNG bytes (or None when
there is nothing to draw)."""

from __future__ import annotations

import io
import math
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.lines  # noqa: E402
import matplotlib.patches  # noqa: E402
import matplotlib.text  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from .hosts import HostComparison  # noqa: E402
from .stored import (DETECTED, EQUIVALENT, HELPS, HOLDS, HOST_BUSY, HURTS, INCONCLUSIVE, INSUFFICIENT,  # noqa: E402
                     MISSED, NO_EFFECT, NOISY, NOT_PRECISE, Experiment, Factorial, ThreadPoint, Trends, Tuning, number, verdict_kind)
from .text import claim_text, effect_text, verdict_words  # noqa: E402

# Names from suites and hosts are drawn as plain text: '$' must never start mathtext.
matplotlib.rcParams["text.parse_math"] = False
matplotlib.rcParams["font.size"] = 10
matplotlib.rcParams["axes.titlesize"] = 11

VERDICT_COLOURS = {
    HELPS: "#1a9641",
    HURTS: "#d7191c",
    NO_EFFECT: "#8c8c8c",
    EQUIVALENT: "#4d7fb3",
    INCONCLUSIVE: "#b8860b",
    NOT_PRECISE: "#e08a2c",
    HOST_BUSY: "#c8c8c8",
    INSUFFICIENT: "#c8c8c8",
    HOLDS: "#4d7fb3",
    DETECTED: "#4d7fb3",
    NOISY: "#d7191c",
    MISSED: "#d7191c",
    "interact": "#7b3294",
    "no measurable interaction": "#8c8c8c",
}
ARM_COLOURS = ["#2c7bb6", "#fdae61", "#1a9641", "#d7191c", "#7b3294", "#8c510a", "#01665e", "#c51b7d"]
HOST_STYLES = ["-", "--", ":", "-."]
HOST_MARKERS = ["o", "s", "^", "D"]


class CutText(UserWarning):
    """A text of a figure reaches past the figure's edge: the PNG shows it cut."""


def cut_texts(fig) -> list[str]:
    """Every visible text of `fig` (titles, labels, tick labels, legends, annotations) whose
    window extent, as the renderer lays it out, reaches past the figure's own extent."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    cut = []
    for t in fig.findobj(matplotlib.text.Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        box = t.get_window_extent(renderer)
        if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1:
            cut.append(f"{t.get_text()[:70]!r} spans x {box.x0:.0f} to {box.x1:.0f}, y {box.y0:.0f} to "
                       f"{box.y1:.0f} of {width:.0f} x {height:.0f} pixels")
    return cut


def png_bytes(fig) -> bytes:
    """The figure as PNG, its texts measured against its edges first: each text that would be cut
    is said as a CutText warning (render.py prints them; the report's tests fail on one)."""
    for cut in cut_texts(fig):
        warnings.warn(cut, CutText, stacklevel=2)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def short(text: str, width: int) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def plain_log_axis(axis, ticks=None):
    """Log-scale tick labels as plain numbers (mathtext is off for safety, see the top)."""
    if ticks is None:
        low, high = axis.get_view_interval()
        ticks = log_ticks(min(low, high), max(low, high))
    axis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def log_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """Readable values (1, 2, 5 x 10^k; else 2 significant digits) for a log axis lo..hi."""
    if not (lo > 0 and hi > lo):
        return [lo] if lo > 0 else [1.0]
    nice = [m * 10.0**k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in (1, 2, 5)]
    ticks = [t for t in nice if lo <= t <= hi]
    while len(ticks) > count:
        ticks = ticks[::2]
    if len(ticks) < 3:
        ticks = sorted({float(f"{t:.2g}") for t in np.geomspace(lo, hi, 4)})
    return ticks


# Tick values of a ratio axis, in the order they are taken: 1, then pairs a person reads as
# opposite (0.5x and 2x, 0.8x and 1.25x) before finer and coarser ones.
RATIO_TICKS = [2, 0.5, 1.25, 0.8, 4, 0.25, 10, 0.1, 1.5, 0.67, 1.1, 0.9, 100, 0.01, 3, 0.33, 1.05, 0.95, 20,
               0.05, 5, 0.2, 50, 0.02, 1.02, 0.98, 1.01, 0.99, 1.005, 0.995]


def ratio_ticks(lo: float, hi: float, count: int = 7) -> list[float]:
    """Readable tick values for a log axis of ratios between lo and hi, 1 always among them."""
    spacing = math.log(hi / lo) / count  # at most ~count labels, evenly apart on the log scale
    ticks = [1.0]
    for c in RATIO_TICKS:
        if lo <= c <= hi and all(abs(math.log(c / t)) >= spacing for t in ticks):
            ticks.append(c)
    return sorted(ticks)


# The forest plot's time axis fits the effects within 2.5x either way of 1, one further out drawn
# at the axis's edge with its numbers (on a 0.01x-100x axis every other effect sat on the line at
# 1): at most 0.4x-2.5x, 5 % apart is 10 pixels or more of the time column in a 1,280-pixel
# window. Memory effects are larger (no_grad: 0.15x) and their column only says which way.
BULK, MEMORY_BULK = 2.5, 8.0
TARGET = 0.02  # the paired designs' target: ±2 %, drawn as a band around 1


def bulk_limits(values: list[float], bulk: float = BULK) -> tuple[float, float]:
    """Axis limits of ratios that fit every value within `bulk` of 1 (and ±10 % at least), padded
    by 5 %: the ratios and interval ends of the forest's effects; the rest lie beyond its edges."""
    inside = [v for v in values if math.isfinite(v) and 1 / bulk <= v <= bulk]
    lo, hi = min(inside + [1 / 1.1]), max(inside + [1.1])
    return max(lo / 1.05, 1 / bulk), min(hi * 1.05, bulk)


def ratio_limits(values: list[float]) -> tuple[float, float]:
    finite = [v for v in values if math.isfinite(v) and v > 0] + [1.0]
    lo, hi = min(finite), max(finite)
    span = max(math.log(hi / lo), math.log(1.2))
    pad = math.exp(0.08 * span)
    return lo / pad, hi * pad


def style_ratio_axis(ax, lo: float, hi: float, left_text: str, right_text: str, title: str,
                     ticks: int = 7, band: bool = False):
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ticks = ratio_ticks(lo, hi, ticks)
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}×" for t in ticks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.axvspan(lo, 1, color=VERDICT_COLOURS[HELPS], alpha=0.07, lw=0)
    ax.axvspan(1, hi, color=VERDICT_COLOURS[HURTS], alpha=0.07, lw=0)
    if band:
        ax.axvspan(1 / (1 + TARGET), 1 + TARGET, color=VERDICT_COLOURS[EQUIVALENT], alpha=0.22, lw=0)
    ax.axvline(1, color="black", lw=0.9)
    ax.grid(axis="x", color="#dddddd", lw=0.6)
    ax.set_axisbelow(True)
    # The title above, the two directions in their own band below it, both placed in points from
    # the axis (not in fractions of it: a tall forest plot's 1 % is as high as a line of text, and
    # the labels then ran into the title).
    ax.set_title(title, fontsize=10.5, loc="center", pad=20)
    ax.annotate(f"← {left_text}", xy=(0.0, 1.0), xycoords="axes fraction", xytext=(0, 3),
                textcoords="offset points", ha="left", va="bottom",
                color=VERDICT_COLOURS[HELPS], fontsize=9, fontweight="bold")
    ax.annotate(f"{right_text} →", xy=(1.0, 1.0), xycoords="axes fraction", xytext=(0, 3),
                textcoords="offset points", ha="right", va="bottom",
                color=VERDICT_COLOURS[HURTS], fontsize=9, fontweight="bold")
    ax.tick_params(axis="y", left=False, labelleft=False)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)


def verdict_colour(words: str) -> str:
    return VERDICT_COLOURS.get(verdict_kind(words), VERDICT_COLOURS[NO_EFFECT])


def draw_interval(ax, y: float, ratio: float, lo: float, hi: float, verdict: str, numbers: str = ""):
    """The interval as a bar, the ratio as a diamond, inside the axis's limits: an interval that
    reaches past an edge ends there with an arrowhead; a ratio past it is an arrow at the edge
    with `numbers` (the effect as tunebench printed it) beside it."""
    colour = verdict_colour(verdict)
    left, right = ax.get_xlim()
    if math.isfinite(lo) and math.isfinite(hi) and hi > left and lo < right:
        a, b = max(lo, left), min(hi, right)
        ax.plot([a, b], [y, y], color=colour, lw=4, solid_capstyle="butt")
        for end, inside, arrow in ((lo, lo >= left, "<"), (hi, hi <= right, ">")):
            if inside:
                ax.plot([end, end], [y - 0.17, y + 0.17], color=colour, lw=1.5)
            else:
                ax.plot([left if arrow == "<" else right], [y], marker=arrow, ms=7, color=colour, clip_on=False)
    if not (math.isfinite(ratio) and ratio > 0):
        return
    if left <= ratio <= right:
        filled = verdict != INSUFFICIENT
        ax.plot([ratio], [y], marker="D", ms=8, color=colour if filled else "white",
                markeredgecolor="black" if filled else colour, markeredgewidth=1.0, zorder=3)
        return
    below = ratio < left
    ax.plot([left if below else right], [y], marker="<" if below else ">", ms=12, color=colour,
            markeredgecolor="black", markeredgewidth=0.8, clip_on=False, zorder=3)
    if numbers:
        ax.annotate(numbers, xy=(left if below else right, y), xytext=(9 if below else -9, 0),
                    textcoords="offset points", ha="left" if below else "right", va="center", fontsize=8.5,
                    color="#222222", fontweight="bold", zorder=4,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": colour, "lw": 0.8})


# The forest's groups in the order `tunebench show` prints them: the controls first (they say
# whether the rest of the run can be trusted), then what to act on, then what is not settled.
FOREST_GROUPS = {0: "controls", 1: "helps", 2: "hurts", 3: "no effect, or none beyond ±2 %",
                 4: "not precise enough, or inconclusive", 5: "insufficient data, or host too busy",
                 6: "no effect computed"}
GROUP_OF_VERDICT = {HELPS: 1, HURTS: 2, NO_EFFECT: 3, EQUIVALENT: 3, INCONCLUSIVE: 4, NOT_PRECISE: 4,
                    INSUFFICIENT: 5, HOST_BUSY: 5}


def forest_group(row: dict) -> int:
    x, e = row["experiment"], row["time"] or row["memory"]
    if x.is_aa or x.is_positive_control:
        return 0
    return GROUP_OF_VERDICT.get(verdict_kind(e.verdict), 6) if e else 6


def forest_rows(experiments: list[Experiment]) -> list[dict]:
    """One row per compared pair: its time effect and, where measured, its memory effect; grouped
    as `show` groups them (forest_group), the largest effect first within a group."""
    rows = []
    for x in experiments:
        compared = []
        for e in x.effects:
            if e.compared not in compared:
                compared.append(e.compared)
        for c in compared:
            time = next((e for e in x.effects if e.compared == c and e.metric == "time"), None)
            memory = next((e for e in x.effects if e.compared == c and e.metric == "peak memory"), None)
            sub = x.workload
            if x.knob == "factorial":
                sub = c.split(" vs ")[0] + "  vs all off"
            elif x.is_aa:
                sub = "A/A control (identical arms): expect no effect"
            elif x.is_positive_control:
                sub = f"positive control: ON {100 * x.slowdown:g}% slower by construction"
            rows.append({"experiment": x, "label": x.name, "sub": sub, "time": time, "memory": memory})
        if not compared:
            rows.append({"experiment": x, "label": x.name, "sub": x.problem or "no effect computed",
                         "time": None, "memory": None})

    def size(row):  # how far from 1 the effect lies; controls keep their order
        e = row["time"] or row["memory"]
        if forest_group(row) == 0 or not e or not (math.isfinite(e.ratio) and e.ratio > 0):
            return 0.0
        return -abs(math.log(e.ratio))
    return sorted(rows, key=lambda r: (forest_group(r), size(r)))


def plot_forest(experiments: list[Experiment], hostname: str) -> bytes | None:
    fig = forest_figure(experiments, hostname)
    return png_bytes(fig) if fig else None


def forest_figure(experiments: list[Experiment], hostname: str):
    rows = forest_rows(experiments)
    if not rows:
        return None
    has_memory = any(r["memory"] for r in rows)
    # Each group under a heading half a row high; rows one unit high, centred on their y.
    places, cursor, group = [], 0.0, None
    for row in rows:
        if forest_group(row) != group:
            group = forest_group(row)
            count = sum(forest_group(r) == group for r in rows)
            places.append(("heading", f"{FOREST_GROUPS[group]} ({count})", cursor + 0.27))
            cursor += 0.55
        places.append(("row", row, cursor + 0.5))
        cursor += 1
    # The legend above takes three lines: on two a long host name ran past the figure's right edge.
    height = 0.62 * cursor + 1.7
    fig = plt.figure(figsize=(13.5, height))
    top, bottom = 1 - 1.2 / height, 0.45 / height
    spans = {"label": (0.005, 0.225), "time": (0.235, 0.555 if has_memory else 0.63),
             "memory": (0.57, 0.685), "text": (0.70 if has_memory else 0.645, 0.995)}
    axes = {}
    for key, (x0, x1) in spans.items():
        if key == "memory" and not has_memory:
            continue
        axes[key] = fig.add_axes([x0, bottom, x1 - x0, top - bottom])
        axes[key].set_ylim(cursor, 0)
    for key in ("label", "text"):
        axes[key].axis("off")
        axes[key].set_xlim(0, 1)
    values = [v for r in rows if r["time"] for v in (r["time"].ratio, r["time"].lo, r["time"].hi)]
    style_ratio_axis(axes["time"], *bulk_limits(values), "faster: helps", "slower: hurts",
                     "time per iteration, on ÷ off (95 % interval)", ticks=8, band=True)
    if has_memory:
        values = [v for r in rows if r["memory"] for v in (r["memory"].ratio, r["memory"].lo, r["memory"].hi)]
        mlo, mhi = bulk_limits(values, MEMORY_BULK)
        style_ratio_axis(axes["memory"], mlo, mhi, "less", "more", "peak memory, on ÷ off", ticks=3)
    shade = False
    for kind, item, y in places:
        if kind == "heading":
            for ax in axes.values():
                ax.axhline(y - 0.27, color="#999999", lw=0.8)
            axes["label"].text(0.0, y + 0.02, item, fontsize=9.5, fontweight="bold", color="#333333",
                               va="center", ha="left")
            shade = False
            continue
        draw_forest_row(axes, item, y, shade, math.sqrt(mlo * mhi) if has_memory else None)
        shade = not shade
    axes["time"].set_yticks([])
    fig.text(0.005, 1 - 0.05 / height, f"Which advice helps on {short(hostname, 40)}: diamond = measured ratio, "
             "bar = 95 % interval, blue band = ±2 % around 1 (the target);\nan effect past the axis is an arrow at "
             "its edge with its numbers; green helps, red hurts, grey no measurable effect,\nblue no effect beyond "
             "±2 % (a control: holds 1, detected), orange not precise enough",
             fontsize=10, va="top", ha="left", color="#333333", linespacing=1.3)
    return fig


def draw_forest_row(axes: dict, row: dict, y: float, shade: bool, memory_middle: float | None):
    """One row of the forest: its name, its intervals, the verdict's words with the numbers beside
    them (each text placed after the one before it, so none runs into the next) and the claim."""
    if shade:
        for ax in axes.values():
            ax.axhspan(y - 0.5, y + 0.5, color="#f0f0f0", zorder=0, lw=0)
    x = row["experiment"]
    axes["label"].text(0.0, y - 0.1, short(row["label"], 40), fontsize=9.5, fontweight="bold",
                       va="center", ha="left")
    axes["label"].text(0.0, y + 0.24, short(row["sub"], 48), fontsize=8.5, color="#555555",
                       va="center", ha="left")
    time, memory = row["time"], row["memory"]
    if time:
        draw_interval(axes["time"], y, time.ratio, time.lo, time.hi, verdict_words(time), effect_text(time))
    if memory_middle is not None:
        if memory:
            draw_interval(axes["memory"], y, memory.ratio, memory.lo, memory.hi, verdict_words(memory),
                          effect_text(memory))
        else:
            axes["memory"].text(memory_middle, y, "not measured", ha="center", va="center", fontsize=8,
                                color="#999999")
    lines = [(name, e) for name, e in (("time", time), ("memory", memory)) if e]
    # One effect whose words and numbers make a long line (a noisy A/A's) takes two lines instead.
    stacked = len(lines) == 1 and len(verdict_words(lines[0][1]) + effect_text(lines[0][1])) > 44
    line_y = y - 0.27 if len(lines) == 2 or stacked else y - 0.12
    for name, e in lines:
        words = verdict_words(e)
        said = axes["text"].text(0.0, line_y, words.upper() if words in (HELPS, HURTS) else words,
                                 color=verdict_colour(words), fontsize=9.5, fontweight="bold", va="center",
                                 ha="left")
        numbers = f"{name} {effect_text(e)}"
        if stacked:
            line_y += 0.24
            axes["text"].text(0.0, line_y, numbers, color="#333333", fontsize=8.5, va="center", ha="left")
        else:
            axes["text"].annotate(numbers, xy=(1.0, 0.5), xycoords=said, xytext=(7, 0), textcoords="offset points",
                                  color="#333333", fontsize=8.5, va="center", ha="left")
        line_y += 0.24
    if not lines:
        axes["text"].text(0.0, line_y, "no effect computed", color="#999999", fontsize=9, va="center")
        line_y += 0.24
    axes["text"].text(0.0, line_y + (0.02 if len(lines) < 2 and not stacked else 0), short(claim_text(x), 60),
                      fontsize=8.5, style="italic", color="#555555", va="center", ha="left")


def plot_factorial(f: Factorial) -> bytes:
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 3.4), gridspec_kw={"width_ratios": [1.25, 1]})
    fig.subplots_adjust(left=0.19, right=0.98, top=0.78, bottom=0.16, wspace=0.3)
    estimates = f.main_effects + f.interactions
    labels = ([f"main effect\n{short(e.label, 30)}" for e in f.main_effects]
              + [f"interaction\n{short(e.label, 30)}" for e in f.interactions])
    lo, hi = ratio_limits([v for e in estimates for v in (e.ratio, e.lo, e.hi)])
    style_ratio_axis(left, lo, hi, "faster", "slower", "effect on time (95 % interval)")
    for i, e in enumerate(estimates):
        draw_interval(left, i, e.ratio, e.lo, e.hi, e.verdict)
    left.set_ylim(len(estimates) - 0.5, -0.5)
    left.set_yticks(range(len(estimates)))
    left.tick_params(axis="y", labelleft=True)
    left.set_yticklabels(labels, fontsize=9)
    # Interaction plot of the first two factors: the stored medians of their four cells with any
    # other factors off.
    a, b = f.factors[0], f.factors[1]

    def cell_median(level_a: bool, level_b: bool) -> float:  # NaN (not drawn) for a missing cell
        return next((m for _, lv, m, _ in f.cells if lv.get(a) == level_a and lv.get(b) == level_b
                     and not any(on for k, on in lv.items() if k not in (a, b))), float("nan"))

    lines = {level_b: [cell_median(level_a, level_b) for level_a in (False, True)] for level_b in (False, True)}
    unit, scale = time_unit(min((y for ys in lines.values() for y in ys if math.isfinite(y)), default=1.0))
    for level_b, colour in ((False, ARM_COLOURS[0]), (True, ARM_COLOURS[1])):
        right.plot([0, 1], [y * scale for y in lines[level_b]], marker="o", color=colour, lw=2,
                   label=f"{short(b, 24)} {'on' if level_b else 'off'}")
    right.set_xticks([0, 1])
    right.set_xticklabels([f"{short(a, 24)} off", f"{short(a, 24)} on"])
    right.set_xlim(-0.3, 1.3)
    right.set_ylabel(f"median time per iteration ({unit})")
    right.set_title("interaction plot: parallel lines = no interaction", fontsize=10)
    right.legend(fontsize=9, frameon=False)
    right.grid(axis="y", color="#e5e5e5")
    fig.suptitle(f"{short(f.experiment, 70)}  ({f.workload}): main effects, interaction", fontsize=11,
                 x=0.01, ha="left")
    return png_bytes(fig)


def time_unit(seconds: float) -> tuple[str, float]:
    if seconds < 1e-3:
        return "µs", 1e6
    if seconds < 1:
        return "ms", 1e3
    return "s", 1.0


def plot_trends(trends: Trends) -> bytes | None:
    experiments = [x for x, ss in trends.series.items() if max(len(s.when) for s in ss) >= 2]
    if not experiments:
        return None
    columns = 2 if len(experiments) > 1 else 1
    rows = -(-len(experiments) // columns)
    # Room below the last row for its dates' second line (the year and month, "2025-Jan-05"), which
    # 0.35 inches cut off.
    height = 2.9 * rows + 1.1
    fig, axes = plt.subplots(rows, columns, figsize=(13.5, height), squeeze=False)
    fig.subplots_adjust(left=0.06, right=0.99, top=1 - 0.85 / height, bottom=0.55 / height, hspace=0.62,
                        wspace=0.16)
    hosts = sorted({s.host for ss in trends.series.values() for s in ss})
    git_changes = [c for c in trends.changes if c.kind == "git"]
    draw_git = trends.draws_git_changes
    for index, experiment in enumerate(experiments):
        ax = axes[index // columns][index % columns]
        series = trends.series[experiment]
        arms = []
        for s in series:
            if s.arm not in arms:
                arms.append(s.arm)
        lowest = min(min(s.medians) for s in series)
        unit, scale = time_unit(lowest)
        wide = max(max(s.medians) for s in series) / lowest > 4  # e.g. 1 thread vs all cores
        for s in series:
            colour = ARM_COLOURS[arms.index(s.arm) % len(ARM_COLOURS)]
            h = hosts.index(s.host)
            ax.fill_between(s.when, np.array(s.lows) * scale, np.array(s.highs) * scale, color=colour, alpha=0.18, lw=0)
            ax.plot(s.when, np.array(s.medians) * scale, color=colour, ls=HOST_STYLES[h % 4], lw=1.3,
                    marker=HOST_MARKERS[h % 4] if len(s.when) <= 40 else None, ms=3)
            marked = [i for i, u in enumerate(s.run_uuids) if (u, experiment, s.arm) in trends.regressions]
            if marked:
                ax.plot([s.when[i] for i in marked], [s.medians[i] * scale * 1.04 for i in marked],
                        "v", color="#d7191c", ms=8, zorder=4)
        labelled = set()
        for change in trends.changes:
            if change.kind == "LibTorch":
                ax.axvline(change.when, color="#7b3294", lw=1.4)
                if (change.text, change.when.date()) not in labelled:  # hosts that changed the same day
                    labelled.add((change.text, change.when.date()))
                    ax.text(change.when, 0.98, " " + change.text, transform=ax.get_xaxis_transform(),
                            fontsize=7.5, color="#7b3294", va="top", ha="left")
            elif draw_git:
                ax.axvline(change.when, color="#999999", lw=0.8, ls=":")
        if wide:
            ax.set_yscale("log")
            ax.autoscale_view()
            plain_log_axis(ax.yaxis)
        legend_rows = 0 if len(arms) <= 2 else -(-len(arms) // 2)  # many arms: legend under the title
        ax.set_title(short(experiment, 60), fontsize=10, loc="left", pad=4 + 10.5 * legend_rows)
        ax.set_ylabel(f"{unit} / iteration" + (" (log)" if wide else ""), fontsize=9)
        ax.grid(axis="y", color="#e5e5e5")
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
        ax.tick_params(labelsize=8.5)
        handles = [matplotlib.lines.Line2D([], [], color=ARM_COLOURS[i % len(ARM_COLOURS)], lw=2, label=short(a, 32))
                   for i, a in enumerate(arms)]
        ax.legend(handles=handles, fontsize=7.5, frameon=False, loc="lower left" if legend_rows else "lower right",
                  bbox_to_anchor=(0.0, 1.0) if legend_rows else (1.0, 1.0), ncol=2 if legend_rows else len(arms),
                  borderaxespad=0.1, handlelength=1.5, labelspacing=0.2)
    for index in range(len(experiments), rows * columns):
        axes[index // columns][index % columns].axis("off")
    handles = [matplotlib.lines.Line2D([], [], color="#333333", ls=HOST_STYLES[i % 4],
                                       marker=HOST_MARKERS[i % 4], label=f"host {short(h, 30)}")
               for i, h in enumerate(hosts)]
    handles.append(matplotlib.patches.Patch(color="#888888", alpha=0.3, label="range of the run's process medians"))
    handles.append(matplotlib.lines.Line2D([], [], color="#7b3294", lw=1.4, label="LibTorch version change"))
    if draw_git and git_changes:
        handles.append(matplotlib.lines.Line2D([], [], color="#999999", lw=0.8, ls=":", label="git revision change"))
    if trends.regressions:
        handles.append(matplotlib.lines.Line2D([], [], color="#d7191c", marker="v", ls="",
                                               label="regression or step change (tunebench check)"))
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=9, frameon=False)
    return png_bytes(fig)


def human(value: float) -> str:
    """3 significant digits without exponents: 68,300 · 38.2 · 0.00424."""
    if value >= 1000:
        return f"{value:,.0f}" if value < 1e7 else f"{value:.3g}"
    return f"{value:.3g}"


def workload_label(workload: tuple) -> str:
    model, preset, mode, batch = workload
    return f"{model} {preset} {mode} b{batch}"


def plot_throughput(comparison: HostComparison | None) -> bytes | None:
    rows = [r for r in comparison.rows if r.items_per_second.value] if comparison else []
    if not rows:
        return None
    workloads = list(dict.fromkeys(r.workload for r in rows))
    hosts = sorted({r.host for r in rows})
    metrics = [("items / s", lambda r: r.items_per_second), ("items / s per core", lambda r: r.per_core)]
    if any(r.items_per_unit.value for r in rows):
        metrics.append(("items per currency unit (price per hour)", lambda r: r.items_per_unit))
    height_in = 0.32 * len(workloads) * len(hosts) + 0.25 * len(workloads) + 1.3
    fig, axes = plt.subplots(1, len(metrics), figsize=(13.5, height_in), sharey=True, squeeze=False)
    fig.subplots_adjust(left=0.15, right=0.98, top=1 - 0.75 / height_in, bottom=0.45 / height_in, wspace=0.12)
    height = 0.8 / len(hosts)
    for ax, (title, value) in zip(axes[0], metrics):
        for h, host in enumerate(hosts):
            ys, xs, errors = [], [], [[], []]
            for w, workload in enumerate(workloads):
                r = next((r for r in rows if r.workload == workload and r.host == host), None)
                f = value(r) if r else None
                if f and f.value:
                    ys.append(w - 0.4 + height * (h + 0.5))
                    xs.append(f.value)
                    has_interval = f.lo is not None and f.hi is not None
                    errors[0].append(f.value - f.lo if has_interval else 0)
                    errors[1].append(f.hi - f.value if has_interval else 0)
            bars = ax.barh(ys, xs, height=height * 0.9, color=ARM_COLOURS[h % len(ARM_COLOURS)], label=short(host, 30),
                           xerr=errors, error_kw={"ecolor": "#333333", "elinewidth": 1, "capsize": 2})
            ax.bar_label(bars, labels=[human(x) for x in xs], fontsize=7.5, padding=4)
        ax.set_xscale("log")
        ax.margins(x=0.25)
        ax.autoscale_view()
        plain_log_axis(ax.xaxis)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", color="#e5e5e5")
    axes[0][0].set_yticks(range(len(workloads)))
    axes[0][0].set_yticklabels(workloads, fontsize=9)
    axes[0][0].invert_yaxis()
    axes[0][0].legend(fontsize=9, frameon=False, loc="lower right")
    fig.suptitle("Throughput with default settings (every knob off, all cores), each host's latest run, "
                 "95 % intervals; longer is better", fontsize=10.5, x=0.01, ha="left")
    return png_bytes(fig)


def plot_thread_sweep(points: list[ThreadPoint]) -> bytes | None:
    if not points:
        return None
    workloads = sorted({p.workload for p in points})
    hosts = sorted({p.host for p in points})
    columns = min(len(workloads), 3)
    rows = -(-len(workloads) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(max(9.0, 4.5 * columns), 3.3 * rows + 0.5), squeeze=False)
    fig.subplots_adjust(left=0.1 if columns > 1 else 0.12, right=0.98, top=1 - 0.7 / (3.3 * rows + 0.5),
                        bottom=0.5 / (3.3 * rows + 0.5), wspace=0.3, hspace=0.45)
    for ax in axes.flat[len(workloads):]:
        ax.axis("off")
    for ax, workload in zip(axes.flat, workloads):
        for h, host in enumerate(hosts):
            pts = [p for p in points if p.workload == workload and p.host == host]
            if not pts:
                continue
            colour = ARM_COLOURS[h % len(ARM_COLOURS)]
            threads = [p.threads for p in pts]
            seconds = [p.median_seconds for p in pts]
            ms = [1e3 * v for v in seconds]
            ax.plot(threads, ms, marker=HOST_MARKERS[h % 4], color=colour, lw=2, label=short(host, 30))
            if pts[0].threads == 1:
                ax.plot(threads, [ms[0] / t for t in threads], ls=":", color=colour, lw=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.autoscale_view()
        plain_log_axis(ax.xaxis, sorted({p.threads for p in points if p.workload == workload}))
        plain_log_axis(ax.yaxis)
        ax.set_xlabel("threads (OMP_NUM_THREADS)")
        ax.set_ylabel("median ms / iteration")
        ax.set_title(workload_label(workload), fontsize=10)
        ax.grid(color="#e5e5e5")
        ax.legend(fontsize=8.5, frameon=False)
    fig.suptitle("Thread sweep: time per iteration against threads; dotted = perfect scaling from 1 thread",
                 fontsize=10.5, x=0.01, ha="left")
    return png_bytes(fig)


def ladder_rows(t: Tuning) -> list[dict]:
    """One row per step of the ladder, then the configuration against the defaults (final run)."""
    rows = []
    for i, step in enumerate(t.recommendation.get("ladder", [])):
        kept = bool(step.get("kept"))
        fate = "left out undecided" if step.get("undecided") else "dropped"
        rows.append({"label": f"{i + 1}. + {step.get('knob', '?')}",
                     "sub": (f"against {step.get('against', '?')}: kept" if kept
                             else f"{fate}: {step.get('why', '')}"),
                     "effect": step, "cumulative": step.get("cumulative") if kept else None})
    final = (t.recommendation.get("vs_default") or {}).get("time")
    if final:
        rows.append({"label": "configuration vs defaults", "sub": "measured as a whole (final run)",
                     "effect": final, "cumulative": None})
    return rows


def plot_ladder(t: Tuning) -> bytes | None:
    rows = ladder_rows(t)
    if not rows:
        return None
    n = len(rows)
    fig = plt.figure(figsize=(12.5, 0.62 * n + 1.3))
    top, bottom = 1 - 0.8 / (0.62 * n + 1.3), 0.45 / (0.62 * n + 1.3)
    label = fig.add_axes([0.005, bottom, 0.3, top - bottom])
    ax = fig.add_axes([0.33, bottom, 0.42, top - bottom])
    text = fig.add_axes([0.77, bottom, 0.225, top - bottom])
    for a in (label, ax, text):
        a.set_ylim(n - 0.5, -0.5)
    for a in (label, text):
        a.axis("off")
        a.set_xlim(0, 1)
    values = [number(v) for r in rows for e in (r["effect"], r["cumulative"]) if e
              for v in (e.get("ratio"), e.get("lo"), e.get("hi"))]
    lo, hi = ratio_limits(values)
    style_ratio_axis(ax, lo, hi, "faster", "slower", "time per iteration: each step on ÷ off (diamond), "
                     "cumulative (circle), 95 % intervals")
    for i, r in enumerate(rows):
        if i % 2:
            for a in (label, ax, text):
                a.axhspan(i - 0.5, i + 0.5, color="#f0f0f0", zorder=0, lw=0)
        label.text(0.0, i - 0.1, short(r["label"], 40), fontsize=9.5, fontweight="bold", va="center")
        label.text(0.0, i + 0.24, short(r["sub"], 58), fontsize=8.5, color="#555555", va="center")
        e = r["effect"]
        draw_interval(ax, i, number(e.get("ratio")), number(e.get("lo")), number(e.get("hi")),
                      e.get("verdict", ""))
        c = r["cumulative"]
        if c and math.isfinite(number(c.get("ratio"))):
            ax.plot([number(c.get("lo")), number(c.get("hi"))], [i + 0.3, i + 0.3], color="#333333", lw=1.2)
            ax.plot([number(c.get("ratio"))], [i + 0.3], marker="o", ms=6, color="#333333")
        text.text(0.0, i - 0.1, short(e.get("text") or "not measured", 40), fontsize=8.5, va="center")
        if c:
            text.text(0.0, i + 0.24, short("cumulative " + c.get("text", ""), 44), fontsize=8.5,
                      color="#555555", va="center")
    ax.set_yticks([])
    fig.text(0.005, 0.995, f"The ladder of {short(t.model, 60)}: each knob added to the configuration before it",
             fontsize=10, va="top", ha="left", color="#333333")
    return png_bytes(fig)

