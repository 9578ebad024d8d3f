"""The Markdown summary: short, for a CI job summary; HTML-escaped (job summaries render HTML)
and with Markdown's specials neutralised."""

from __future__ import annotations

import html
from pathlib import Path

from .assemble import SECTIONS, Report
from .stored import HELPS, HURTS, INSUFFICIENT, NO_EFFECT, Check, Tuning
from .text import (KEPT, agreement, agreement_line, certification_line, claim_text, control_effects, controls_summary,
                   effect_text, final_effects, floors_caption, glance_groups, ladder_product, ladder_steps,
                   not_certified_text, percent, settings_text, stages, step_fate, stored_effect_text, value_text,
                   verdict_words)

def md(value) -> str:
    """Text for a Markdown table cell: HTML-escaped (job summaries render HTML) and with
    Markdown's own specials neutralised."""
    text = str(value).replace("\n", " ")
    for ch in "\\`*_[]|~#":
        text = text.replace(ch, "\\" + ch)
    return html.escape(text, quote=False)


def check_markdown(check: Check) -> list:
    lines = ["### Found by tunebench check", ""]
    if check.findings:
        lines.extend(f"- **{md(f.kind)}** {md(f.experiment)}" + (f" ({md(f.arm)})" if f.arm else "") + f": {md(f.detail)}"
                     for f in check.findings)
    else:
        lines.append(md(check.findings_note))
    lines += ["", "### Noise floors", ""]
    if check.floors:
        lines.append(md(floors_caption(check.floors)))
        lines += ["", "| benchmark | arm | run-to-run spread | smallest detectable slowdown |", "|---|---|---|---|"]
        lines.extend(f"| {md(f.experiment)} | {md(f.arm)} | {md(percent(f.spread))} | {md(percent(f.min_detectable))} |"
                     for f in check.floors)
    else:
        lines.append(md(check.floors_note))
    lines.append("")
    return lines


def tuning_markdown(t: Tuning) -> list:
    """A recommendation of `tunebench tune`: its certification first, the settings, the final
    measurement beside the ladder's product, the ladder, the stages."""
    r = t.recommendation
    lines = [f"### Tuning: {md(t.model or r.get('model', '?'))} ({md(r.get('mode', '?'))}, batch {md(r.get('batch', '?'))})",
             "", f"Tuning {md(t.uuid)} of {md(t.created_at)}  "]
    uncertified = not_certified_text(r)
    if uncertified:
        lines.append(f"**NOT CERTIFIED.** {md(uncertified)}  ")
    settings = r.get("settings") if isinstance(r.get("settings"), dict) else {}
    lines.append(f"**Recommended:** {md(settings_text(r.get('resolved') or settings))}  " if settings
                 else "**Recommended:** keep the defaults: no knob helped alone on this host  ")
    finals = final_effects(r)
    time, product = dict(finals).get("time"), ladder_product(r)
    if time is not None or product is not None:
        agree = agreement(r)
        lines.append(f"time against the defaults (final measurement): "
                     f"{md(stored_effect_text(time)) if time is not None else 'not measured'} · "
                     f"the ladder's product: {md(stored_effect_text(product)) if product is not None else 'no kept step'} · "
                     + ("**they agree**" if agree else "**they DISAGREE**" if agree is False else "not compared") + "  ")
        if agree is False:
            lines.append(md(agreement_line(r)) + "  ")
    lines.extend(f"{md(metric)} against the defaults: {md(stored_effect_text(e))}  " for metric, e in finals if metric != "time")
    single = r.get("vs_best_single") if isinstance(r.get("vs_best_single"), dict) else {}
    lines.extend(f"{md(metric)} against {md(settings_text(r.get('best_single')))} alone: {md(stored_effect_text(e))}  "
                 for metric, e in single.items() if isinstance(e, dict))
    steps = ladder_steps(r)
    if steps:
        lines += ["", "| step | knob | measured against | effect [95 % interval] | kept / dropped / left out | "
                      "cumulative (product of the kept steps) | why |", "|---|---|---|---|---|---|---|"]
        for i, s in enumerate(steps):
            fate = step_fate(s)
            knob = f"{s.get('knob', '?')}" + (f"={value_text(s['value'])}" if "value" in s else "")
            cumulative = stored_effect_text(s.get("cumulative")) if fate == KEPT else ""
            lines.append(f"| {i + 1} | {md(knob)} | {md(s.get('against', ''))} | {md(stored_effect_text(s))} | "
                         f"{md(fate)} | {md(cumulative)} | {md(s.get('why', ''))} |")
    certified = [f"{md(s.get('stage', '?'))}: {md(certification_line(s.get('certification')))}"
                 for s in stages(r) if certification_line(s.get("certification"))]
    if certified:
        lines += ["", "**Stages:** " + "; ".join(certified)]
    lines.append("")
    return lines


VERDICT_MARKS = {HELPS: "🟢 helps", HURTS: "🔴 hurts", NO_EFFECT: "⚪ no measurable effect",
                 INSUFFICIENT: "⚫ insufficient data"}


def render_markdown(report: Report, html_path: Path) -> str:
    lines = []
    run = report.run
    if run:
        lines.append(f"## tunebench report: run {md(run.uuid[:8])}, suite {md(run.suite_name)}, {md(run.started_at)}")
        lines.append("")
        lines.append(f"Host **{md(run.hostname)}** ({md(run.cpu_model)}, {md(run.cores)} cores) · "
                     f"LibTorch {md(run.libtorch_version)} · git {md(run.git_revision[:7])} · status {md(run.status)}")
        lines.append("")
        if run.certification:
            why = md(run.certification.split(": ", 1)[-1])
            lines.append(f"**Not certified by its controls, nor any verdict of this run:** {why}" if run.not_certified
                         else f"Certified by its controls: {why}")
            lines.append("")
        controls = control_effects(report)
        if controls:
            lines.append("**Controls:** " + "; ".join(f"{md(x.name)} {md(effect_text(e))} {md(verdict_words(e))}"
                                                       for x, e in controls) + "  ")
        groups = glance_groups(report)
        for verdict in (HELPS, HURTS):
            if groups.get(verdict):
                names = ", ".join(md(n) + (" (peak memory)" if m == "peak memory" else "") for n, m, _ in groups[verdict])
                lines.append(f"**{'Helps' if verdict == HELPS else 'Hurts'} on {md(run.hostname)}:** {names}  ")
        lines.append("")
        if any(x.effects for x in report.experiments):
            lines.append("| verdict | experiment | metric | measured effect [95 % interval] | claim |")
            lines.append("|---|---|---|---|---|")
            for x in report.experiments:
                for e in x.effects:
                    name = x.name if x.knob != "factorial" else f"{x.name}: {e.compared}"
                    words = verdict_words(e)
                    lines.append(f"| {VERDICT_MARKS.get(words, md(words))} | {md(name)} | {md(e.metric)} | "
                                 f"{md(effect_text(e))} | {md(claim_text(x))} |")
            lines.append("")
        if report.controls:
            lines.append("**Controls over the series:** " + md("; ".join(controls_summary(report.controls))) + ".")
            lines.append("")
        compared = report.hosts_compared
        if compared and len(compared.hosts) > 1:
            lines.append(f"**Hosts ranked by items/s** (suite {md(compared.suite)}; a shared rank: not distinguishable):")
            lines.extend(f"- {md(w)}: {md('; '.join(ranks))}" for w, ranks in compared.rankings.items())
            lines.append("")
        if report.check:
            lines.extend(check_markdown(report.check))
    else:
        lines.append("## tunebench report")
        lines.append("")
    for t in report.tunings:
        lines.extend(tuning_markdown(t))
    if report.tunings_stored > len(report.tunings):
        lines.append(f"{report.tunings_stored - len(report.tunings)} older recommendation(s) not shown: "
                     "`tunebench show UUID` prints any of them again.")
        lines.append("")
    if report.warnings:
        lines.append("**Read with care:**")
        lines.extend(f"- {md(w)}" for w in report.warnings)
        lines.append("")
    missing = []
    for section, items in report.missing.items():
        for text in items:
            sections = [s for s, texts in report.missing.items() if text in texts]
            if sections[0] == section:  # a note shared by several sections is listed once
                missing.append((SECTIONS.get(section, section) if len(sections) == 1 else "Everywhere", text))
    if missing:
        lines.append("**Not in this report:**")
        lines.extend(f"- {md(section)}: {md(text)}" for section, text in missing)
        lines.append("")
    lines.append(f"Full report (figures, trends, hosts): {md(html_path)}")
    return "\n".join(lines) + "\n"


