"""Text both output formats share: an effect's numbers, a claim, percentages, the noise floors'
caption, the verdict groups at a glance, the controls' coverage."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .stored import (EQUIVALENT, HELPS, HOST_BUSY, HURTS, INCONCLUSIVE, INSUFFICIENT, NO_EFFECT, NO_RESULT,
                     NOT_PRECISE, Experiment, verdict_kind)

if TYPE_CHECKING:  # assemble imports this module
    from .assemble import Report

def claim_text(x: Experiment) -> str:
    if x.is_aa:
        return "control: both arms identical"
    if x.is_positive_control:
        return f"control: ON arm {100 * x.slowdown:g}% slower by construction (expect {1 + x.slowdown:.2f}x)"
    if x.knob == "factorial":
        return "factorial: " + " × ".join(x.factors)
    if x.claim.get("claim"):
        return "claim: " + x.claim["claim"]
    return "no claim recorded for this knob"


def split_text(e) -> tuple[str, str]:
    """A stored effect's text as tunebench printed it, split into its numbers and its words:
    ("0.95x [0.89, 1.02]", "not precise enough (±6.9%)"), ("0.99x [0.97, 1.01]", "holds 1 (±2.0%)").
    The words are the stored verdict where the text has none."""
    text = (e.text or "").strip()
    numbers, bracket, words = text.partition("] ")
    if not bracket:
        return text, e.verdict
    return numbers + "]", words.strip() or e.verdict


def effect_text(e) -> str:
    """The ratio and interval of a stored effect as tunebench printed them, without the verdict."""
    return split_text(e)[0]


def verdict_words(e) -> str:
    """The verdict as tunebench printed it beside the numbers, with its width where it has one,
    and a control's own words ("holds 1 (±1.0%)", "detected")."""
    return split_text(e)[1]


def glance_groups(report: Report) -> dict:
    groups = {HELPS: [], HURTS: [], NO_EFFECT: [], EQUIVALENT: [], INCONCLUSIVE: [], NOT_PRECISE: [],
              HOST_BUSY: [], INSUFFICIENT: [], NO_RESULT: []}
    for x in report.experiments:
        if x.is_aa or x.is_positive_control:
            continue  # control_effects: they say whether the run can be trusted, not what helps
        for e in x.effects:
            name = x.name if x.knob != "factorial" else f"{x.name}: {e.compared.split(' vs ')[0]}"
            groups.setdefault(verdict_kind(e.verdict), []).append((name, e.metric, x))
        if not x.effects:
            groups[NO_RESULT].append((x.name, "time", x))
    return groups


def control_effects(report: Report) -> list:
    """The run's controls' time effects, (experiment, effect), in the run's order."""
    return [(x, e) for x in report.experiments if x.is_aa or x.is_positive_control
            for e in x.effects if e.metric == "time"]


def percent(fraction) -> str:
    """As tunebench's format_percent: one decimal, '-' when not a number."""
    return f"{100 * fraction:.1f} %" if isinstance(fraction, (int, float)) and math.isfinite(fraction) else "-"


def floors_caption(floors: list) -> str:
    """The calibration's settings in words; each stored per row, listed once when rows agree."""
    def values(attr, fmt):
        return " / ".join(dict.fromkeys(fmt(getattr(f, attr)) for f in floors))
    return (f"Noise floors from {values('runs', str)} A/A runs (calibrated {values('calibrated_at', str)}): "
            "the run-to-run spread of each benchmark's run median, expm1(σ of ln(run median)), and the "
            f"smallest slowdown `tunebench check` detects with probability {values('power', percent)} at a "
            f"{values('false_alarm', percent)} false-alarm rate per run (split over the suite's benchmarks) "
            f"against {values('baseline_runs', str)} baseline runs.")


def controls_summary(controls: list) -> list[str]:
    """Per kind of control: how often its interval covered the truth (and a positive control's
    excluded 1), over the series."""
    out = []
    for kind in dict.fromkeys(c.kind for c in controls):
        rows = [c for c in controls if c.kind == kind]
        text = f"{kind}: the truth inside {sum(c.covered for c in rows)} of {len(rows)}"
        if kind != "A/A":
            text += f", detected in {sum(c.detected for c in rows)} of {len(rows)}"
        out.append(text)
    return out


