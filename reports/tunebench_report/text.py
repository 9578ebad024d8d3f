"""Text both output formats share: an effect's numbers, a claim, percentages, the noise floors'
caption, the verdict groups at a glance, the controls' coverage, and a recommendation of
`tunebench tune` in tune's own words."""

from __future__ import annotations

import json
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




# ----------------------------------------------------------------------------------------------
# A recommendation of `tunebench tune` in tune's own words (harness/run/tune.cpp,
# print_recommendation): both formats say what tune printed, from what it stored.
# ----------------------------------------------------------------------------------------------

KEPT, DROPPED, UNDECIDED = "kept", "dropped", "left out undecided"


def _objects(value) -> list:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _object(value) -> dict:
    return value if isinstance(value, dict) else {}


def value_text(value) -> str:
    """A knob's value as tune writes it: a string as it is, anything else as JSON (true, 2)."""
    return value if isinstance(value, str) else json.dumps(value)


def settings_text(settings) -> str:
    """"amp=true, omp_threads=2", or "the defaults" (tune's said())."""
    return ", ".join(f"{k}={value_text(v)}" for k, v in _object(settings).items()) or "the defaults"


def stored_effect_text(e) -> str:
    """An effect of the recommendation as tune printed it, its interval with it ("0.67x [0.63, 0.72]
    helps"); "not measured" where it stored none (a step that could not be combined, or whose trials
    failed): never a bare number."""
    text = _object(e).get("text")
    return text if isinstance(text, str) and text.strip() else "not measured"


def ladder_steps(r: dict) -> list:
    return _objects(r.get("ladder"))


def step_fate(step: dict) -> str:
    """kept; left out undecided (not shown to help on top of the others, nor not to); dropped."""
    if step.get("kept"):
        return KEPT
    return UNDECIDED if step.get("undecided") else DROPPED


def final_effects(r: dict) -> list[tuple[str, dict]]:
    """(metric, effect) of the final measurement against the defaults, time first."""
    effects = _object(r.get("vs_default"))
    return sorted(((m, e) for m, e in effects.items() if isinstance(e, dict)), key=lambda me: me[0] != "time")


def ladder_product(r: dict) -> dict | None:
    """The ladder's product: the cumulative figure of its last kept step (the one tune compared
    with the final measurement), or None without a kept step."""
    stored = _object(r.get("ladder_against_final")).get("product")
    if isinstance(stored, dict):
        return stored
    kept = [s for s in ladder_steps(r) if s.get("kept") and isinstance(s.get("cumulative"), dict)]
    return kept[-1]["cumulative"] if kept else None


def agreement(r: dict) -> bool | None:
    """Whether the ladder's product and the final measurement agree (their intervals overlap), as tune
    stored it; None where it compared nothing (no kept step, or an end without an interval)."""
    compared = r.get("ladder_against_final")
    return bool(compared.get("agree", True)) if isinstance(compared, dict) else None


def agreement_line(r: dict) -> str:
    """The line tune prints under the recommendation: "the ladder's product … agrees with the final
    measurement …", and when they disagree why and which figure to act on; "" where tune compared
    nothing."""
    compared = r.get("ladder_against_final")
    if not isinstance(compared, dict):
        return ""
    agree = agreement(r)
    line = (f"the ladder's product {_object(compared.get('product')).get('text', '')} "
            f"{'agrees with' if agree else 'DISAGREES with'} the final measurement "
            f"{_object(compared.get('final')).get('text', '')}")
    if not agree:
        line += (f": the kept steps ({settings_text(r.get('settings'))}) do not chain as their product says; "
                 "together they interact (one step's gain taken by another's), or the host moved between the "
                 "stages: act on the final figure")
    return line


def stages(r: dict) -> list[dict]:
    """The tune's runs, one per stage: {"stage", "run", "certification"} as tune stored them."""
    return _objects(r.get("runs"))


def is_not_certified(certification) -> bool:
    return isinstance(certification, str) and certification.startswith("not certified")


def certification_line(certification) -> str:
    """As tunebench prints a run's certification (analysis::certification_line); "" without controls."""
    if not isinstance(certification, str) or not certification:
        return ""
    why = certification.split(": ", 1)[-1]
    return (f"NOT CERTIFIED by its controls, nor any verdict of this run: {why}" if is_not_certified(certification)
            else f"certified by its controls: {why}")


def uncertified_stages(r: dict) -> list[str]:
    return [str(s.get("stage", "?")) for s in stages(r) if is_not_certified(s.get("certification"))]


def not_certified_text(r: dict) -> str:
    """What tune says when the controls of a stage did not hold; "" when every stage's held (or where
    a recommendation from before certification stored none)."""
    failed = uncertified_stages(r)
    if not failed and r.get("certified") is not False:
        return ""
    which = f"the controls of its {' and '.join(failed)} stage did not hold" if failed else "its stages' controls did not hold"
    return (f"The recommendation is NOT CERTIFIED: {which}, so the host moved its figures by more than their "
            "intervals say; run tune again with nothing else on the machine (/proc/pressure/cpu near 0), or "
            "with a larger --budget.")
