"""The Markdown summary: short, for a CI job summary; HTML-escaped (job summaries render HTML)
and with Markdown's specials neutralised."""

from __future__ import annotations

import html
import json
from pathlib import Path

from .assemble import SECTIONS, Report
from .stored import HELPS, HURTS, INSUFFICIENT, NO_EFFECT, Check
from .text import (claim_text, control_effects, controls_summary, effect_text, floors_caption, glance_groups, percent,
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
    if report.tuning:
        r = report.tuning.recommendation
        settings = ", ".join(f"{k}={json.dumps(v)}" for k, v in (r.get("resolved") or {}).items()) or "the defaults"
        lines.append(f"**Recommended for {md(report.tuning.model)}** ({md(r.get('mode', '?'))}, batch "
                     f"{md(r.get('batch', '?'))}): {md(settings)}  ")
        for metric, e in (r.get("vs_default") or {}).items():
            lines.append(f"{md(metric)} against the defaults: {md(e.get('text', ''))}  ")
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


