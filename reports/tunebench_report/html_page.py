"""The HTML page: one self-contained file (figures embedded as base64 PNGs, no scripts, no
network), every name escaped."""

from __future__ import annotations

import base64
import html

from .assemble import Report
from .figures import workload_label
from .hosts import HostComparison
from .stored import (DETECTED, EQUIVALENT, HELPS, HOLDS, HOST_BUSY, HURTS, INCONCLUSIVE, INSUFFICIENT, MISSED,
                     NO_EFFECT, NO_RESULT, NOISY, NOT_PRECISE, Check, Factorial, ThreadPoint, Trends, Tuning, verdict_kind)
from .text import (DROPPED, KEPT, UNDECIDED, agreement, agreement_line, certification_line, claim_text,
                   control_effects, controls_summary, effect_text, final_effects, floors_caption, glance_groups,
                   is_not_certified, ladder_product, ladder_steps, not_certified_text, percent, settings_text, stages,
                   step_fate, stored_effect_text, value_text, verdict_words)

def esc(value) -> str:
    return html.escape(str(value), quote=True)


def breakable(name) -> str:
    """A name escaped, with places to break a line after its dots, pluses and commas: a factorial's
    name (channels_last+no_grad.resnet50-full-infer) and its cells (channels_last=off,no_grad=on)
    would otherwise hold their column, and the table, wider than a 1,024-pixel window."""
    return esc(name).replace(".", ".<wbr>").replace("+", "+<wbr>").replace(",", ",<wbr>")


def figure_html(text: str) -> str:
    """A figure as tunebench printed it ("812 [799, 826]"), escaped, its interval kept on one line:
    a narrow window wraps the cell between the value and its interval, never inside it."""
    value, bracket, interval = esc(text).partition(" [")
    return f'{value} <span class="interval">[{interval}</span>' if bracket else value


def verdict_class(verdict: str) -> str:
    return {HELPS: "helps", HURTS: "hurts", NO_EFFECT: "none", INSUFFICIENT: "insufficient",
            NO_RESULT: "insufficient", EQUIVALENT: "equivalent", INCONCLUSIVE: "none",
            NOT_PRECISE: "imprecise", HOST_BUSY: "insufficient", HOLDS: "equivalent", DETECTED: "equivalent",
            NOISY: "hurts", MISSED: "hurts"}.get(verdict_kind(verdict), "none")


CSS = """
body{font-family:"DejaVu Sans",system-ui,sans-serif;margin:0;color:#222;background:#fff}
main{max-width:1370px;margin:0 auto;padding:10px 16px 40px}
h1{font-size:22px;margin:4px 0 2px} h2{font-size:18px;border-bottom:2px solid #ddd;padding-bottom:3px;margin:26px 0 8px}
h3{font-size:15px;margin:16px 0 6px}
.meta{color:#444;font-size:13.5px;margin:2px 0}
.glance{margin:8px 0 4px;font-size:14px}
.glance div{margin:4px 0}
.glance b{display:inline-block;min-width:190px}
.chip{display:inline-block;border-radius:4px;padding:1px 7px;margin:1px 2px;font-size:13px;color:#fff}
table.effects{width:100%} small{color:#555}
.helps{background:#1a9641;color:#fff} .hurts{background:#d7191c;color:#fff}
.none{background:#8c8c8c;color:#fff} .insufficient{background:#d9d9d9;color:#222} .equivalent{background:#4d7fb3;color:#fff} .imprecise{background:#e08a2c;color:#222}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:5px 12px;font-size:13.5px;margin:8px 0}
.note ul,.warn ul{margin:2px 0;padding-left:20px}
.warn{background:#fdecea;border-left:4px solid #d7191c;padding:5px 12px;font-size:13.5px;margin:8px 0}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.verdict{font-weight:bold;white-space:nowrap}
table.hosts td.num{white-space:normal} .interval{white-space:nowrap}
tr.note-row td{border-top-style:hidden;padding-top:0}
img{max-width:100%;height:auto;display:block;margin:4px 0}
footer{color:#777;font-size:12px;margin-top:30px}
code{font-size:12.5px}
"""


def notes_html(report: Report, section: str) -> str:
    items = report.missing.get(section, [])
    if not items:
        return ""
    return '<div class="note"><b>Not shown here:</b><ul>' + "".join(f"<li>{esc(t)}</li>" for t in items) + "</ul></div>"


def image_html(png: bytes | None, alt: str) -> str:
    if not png:
        return ""
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def certification_html(run) -> str:
    """Whether the run's controls certify it, before any verdict: a run they do not certify
    says that none of its verdicts is certified either."""
    if not run.certification:
        return ""
    why = run.certification.split(": ", 1)[-1]
    if run.not_certified:
        return (f'<div class="warn"><b>Not certified by its controls, nor any verdict of this run:</b> '
                f"{esc(why)}</div>")
    return f'<p class="meta"><b>Certified by its controls:</b> {esc(why)}</p>'


def glance_html(report: Report) -> str:
    """The top of the page: the run's experiments grouped by verdict, and check's findings."""
    run = report.run
    groups = glance_groups(report)
    rows = []
    controls = control_effects(report)
    if controls:
        chips = "".join(f'<span class="chip {verdict_class(verdict_words(e))}">{esc(x.name)}: '
                        f"{esc(effect_text(e))} {esc(verdict_words(e))}</span>" for x, e in controls)
        rows.append(f"<div><b>Controls:</b> {chips}</div>")
    titles = {HELPS: f"Helps on {run.hostname}", HURTS: f"Hurts on {run.hostname}",
              NO_EFFECT: "No measurable effect", EQUIVALENT: "No effect beyond ±2%",
              INCONCLUSIVE: "Inconclusive", NOT_PRECISE: "Not precise enough",
              HOST_BUSY: "Host too busy", INSUFFICIENT: "Insufficient data",
              NO_RESULT: "No effect computed"}
    for verdict, title in titles.items():
        if groups.get(verdict):
            chips = "".join(
                f'<span class="chip {verdict_class(verdict)}">{esc(name)}'
                f'{" · peak memory" if metric == "peak memory" else ""}</span>'
                for name, metric, _ in groups[verdict])
            rows.append(f"<div><b>{esc(title)}:</b> {chips}</div>")
    findings = report.check.findings if report.check else None
    if findings:
        chips = "".join(f'<span class="chip {"none" if f.kind == "stopped helping" else "hurts"}">'
                        f"{esc(f.kind)}: {esc(f.experiment)}{' ' + esc(f.arm) if f.arm else ''}</span>"
                        for f in findings)
        rows.append(f'<div><b><a href="#check">Found by tunebench check</a>:</b> {chips}</div>')
    return '<div class="glance">' + "".join(rows) + "</div>" if rows else ""


# The page in page order, one numbered section after another: its length is the outline of the
# page, each section a few lines that call the helpers above and below.
def render_html(report: Report, figures: dict) -> str:
    run = report.run
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>tunebench report</title>", f"<style>{CSS}</style></head><body><main>"]
    parts.append("<h1>tunebench report</h1>")
    if run:
        d = report.details
        parts.append(
            f'<p class="meta">Run <code>{esc(run.uuid)}</code> · suite <b>{esc(run.suite_name)}</b>'
            + (f" · label {esc(run.label)}" if run.label else "")
            + f" · started {esc(run.started_at)} · {esc(run.status)}</p>"
            f'<p class="meta">Host <b>{esc(run.hostname)}</b> ({esc(run.cpu_model)}, {esc(run.cores)} cores)'
            f" · software {esc(d.software_build or 'LibTorch ' + run.libtorch_version)}"
            f" · git {esc(run.git_revision[:12])}"
            f" · database {esc(report.db_path)} ({len(report.runs)} run(s) on {len(report.hosts)} host(s))</p>"
        )
        parts.append(certification_html(run))
        parts.append(glance_html(report))
    else:
        parts.append(f'<p class="meta">Database {esc(report.db_path)}</p>')
    parts.append(notes_html(report, "run"))
    if report.warnings:
        parts.append('<div class="warn"><b>Read with care:</b><ul>'
                     + "".join(f"<li>{esc(w)}</li>" for w in report.warnings) + "</ul></div>")

    # 1. Claims vs measured
    parts.append("<h2>1. Claims vs measured</h2>")
    if report.experiments:
        parts.append('<p class="meta">Effect = on ÷ off of seconds per iteration (and of peak memory for memory '
                     "knobs) with its 95 % interval: for a paired experiment (both arms alternating inside each "
                     "worker) a t interval over its workers of their adjacent ON/OFF blocks' log ratios; otherwise "
                     "the ratio of medians with a hierarchical bootstrap (processes, then samples). The verdict "
                     "comes from the interval: below 1 helps, above 1 hurts; a paired effect inside ±2 % is no "
                     "effect beyond ±2 %, one wider than ±2 % across 1 is not precise enough.</p>")
        parts.append(image_html(figures.get("forest.png"), "forest plot of every effect of the run"))
        parts.append(effects_table_html(report))
    parts.append(notes_html(report, "claims"))

    # 2. Factorial experiments
    parts.append("<h2>2. Factorial experiments</h2>")
    for i, f in enumerate(report.factorials):
        parts.append(f"<h3>{esc(f.experiment)} <span class=\"meta\">({esc(f.workload)})</span></h3>")
        if f.main_effects:
            parts.append(image_html(figures.get(f"factorial-{i + 1}.png"), "main effects and interaction plot"))
            parts.append(factorial_table_html(f))
        if f.note:
            parts.append(f'<div class="note">{esc(f.note)}</div>')
    parts.append(notes_html(report, "factorial"))

    # 3. Trends
    parts.append("<h2>3. Trends over the nightly history</h2>")
    parts.append(controls_html(report))
    if figures.get("trends.png"):
        parts.append('<p class="meta">Each point: one run\'s median of its processes\' median time per '
                     "iteration; band: the lowest to highest process median of that run. Vertical lines: "
                     "software changes.</p>")
        parts.append(image_html(figures["trends.png"], "median time per iteration over the runs"))
        parts.append(software_changes_html(report.trends))
        if report.trends.regressions:
            parts.append(f'<p class="meta">{esc(report.trends.regression_note)}</p>')
    parts.append(notes_html(report, "trends"))

    # 4. Hosts
    parts.append("<h2>4. Hosts side by side</h2>")
    if report.hosts_compared and report.hosts_compared.rows:
        parts.append(image_html(figures.get("hosts.png"), "throughput per host, per core and per price"))
        parts.append(throughput_table_html(report.hosts_compared))
    if report.threads:
        parts.append("<h3>Thread sweep</h3>")
        parts.append(image_html(figures.get("threads.png"), "time per iteration against threads"))
        parts.append(threads_table_html(report.threads))
    parts.append(notes_html(report, "hosts"))

    # 5. Regression check
    parts.append('<h2 id="check">5. Regression check of this run</h2>')
    if report.check:
        parts.append(check_html(report.check))
    parts.append(notes_html(report, "check"))

    # 6. The newest recommendations of `tunebench tune`: nothing without one
    if report.tunings:
        parts.append('<h2 id="tune">6. Tuning: the recommended configuration for your model</h2>')
        parts.append('<p class="meta">tunebench tune screens every knob on the model, adds the ones that '
                     "help best first, each measured against the configuration so far (kept only where it "
                     "still helps, dropped where it is shown not to, left out where the budget left it "
                     "undecided), then measures the configuration against the defaults. The cumulative "
                     "figure is the product of the kept steps, its interval from theirs: an estimate; the "
                     "final run is the measurement of the whole, the figure to act on. Every effect is "
                     "on ÷ off of seconds per iteration with its 95 % interval, as tune printed it.</p>")
        for i, t in enumerate(report.tunings):
            parts.append(tuning_html(t, figures.get("ladder.png") if i == 0 else None))
        if report.tunings_stored > len(report.tunings):
            older = report.tunings_stored - len(report.tunings)
            parts.append(f'<p class="meta">{older} older recommendation(s) in this database are not shown: '
                         "<code>tunebench show UUID</code> prints any of them again.</p>")
    parts.append(notes_html(report, "tune"))

    if report.details and report.details.not_applicable:
        parts.append("<h2>Not applicable on this host</h2><table><tr><th>experiment</th><th>reason</th></tr>")
        parts.extend(f"<tr><td>{esc(na.get('experiment', '?'))}</td><td>{esc(na.get('reason', ''))}</td></tr>"
                     for na in report.details.not_applicable)
        parts.append("</table>")
    parts.append(f"<footer>Generated {esc(report.generated_at)} by reports/render.py from "
                 f"{esc(report.db_path)}. Figures are embedded; the page needs no network.</footer>")
    parts.append("</main></body></html>")
    return "\n".join(p for p in parts if p)


def check_html(check: Check) -> str:
    parts = ["<h3>Found by tunebench check</h3>"]
    if check.findings:
        parts.append("<table><tr><th>kind</th><th>experiment</th><th>arm</th><th>detail</th></tr>")
        for f in check.findings:
            cls = "none" if f.kind == "stopped helping" else "hurts"
            parts.append(f'<tr><td class="verdict"><span class="chip {cls}">{esc(f.kind)}</span></td>'
                         f"<td>{esc(f.experiment)}</td><td>{esc(f.arm)}</td><td>{esc(f.detail)}</td></tr>")
        parts.append(f'</table><p class="meta">Checked {esc(", ".join(dict.fromkeys(f.checked_at for f in check.findings)))}. '
                     "Regressions and step changes are marked ▼ in the trends.</p>")
    else:
        parts.append(f'<div class="note">{esc(check.findings_note)}</div>')
    parts.append("<h3>Noise floors</h3>")
    if check.floors:
        parts.append('<table><tr><th>benchmark</th><th>arm</th><th>run-to-run spread</th>'
                     "<th>smallest detectable slowdown</th></tr>")
        parts.extend(f'<tr><td>{esc(f.experiment)}</td><td>{esc(f.arm)}</td><td class="num">{esc(percent(f.spread))}</td>'
                     f'<td class="num">{esc(percent(f.min_detectable))}</td></tr>' for f in check.floors)
        parts.append(f'</table><p class="meta">{esc(floors_caption(check.floors))}</p>')
    else:
        parts.append(f'<div class="note">{esc(check.floors_note)}</div>')
    return "\n".join(parts)


def effects_table_html(report: Report) -> str:
    run = report.run
    software = f"LibTorch {run.libtorch_version}, git {run.git_revision[:7]}"
    rows = ['<table class="effects"><tr><th>experiment</th><th>claim</th><th>metric</th>'
            "<th>measured effect [95 % interval]</th><th>verdict</th><th>host</th><th>software</th>"
            "<th>trials ok / failed / invalid</th></tr>"]
    for x in report.experiments:
        trials = (f"{sum(a.ok for a in x.arms)} / {sum(a.failed for a in x.arms)} / "
                  f"{sum(a.invalid for a in x.arms)}")
        claim = claim_text(x)
        if x.claim.get("false_claim"):
            claim += f" (false claim in the sources: {x.claim['false_claim']})"
        for e in x.effects or [None]:
            name = f"{breakable(x.name)}<br><small>{esc(x.workload)}</small>"
            if e is not None and x.knob == "factorial":
                name += f"<br><small>{breakable(e.compared)}</small>"
            if e is None:
                cells = (f"<td></td><td></td><td>{esc(x.problem or 'no effect computed')}</td>")
            else:
                cells = (f"<td>{esc(e.metric)}</td><td class=\"num\">{esc(effect_text(e))}</td>"
                         f'<td class="verdict"><span class="chip {verdict_class(verdict_words(e))}">'
                         f"{esc(verdict_words(e))}</span></td>")
            rows.append(f"<tr><td>{name}</td><td>{esc(claim)}</td>{cells}<td>{esc(run.hostname)}</td>"
                        f"<td>{esc(software)}</td><td class=\"num\">{trials}</td></tr>")
            # The note under its effect, across the table: in a column of its own a long note
            # squeezed to a word per line at 1,024 pixels.
            if e is not None and e.note:
                rows.append(f'<tr class="note-row"><td colspan="8"><small>note: {esc(e.note)}</small></td></tr>')
    rows.append("</table>")
    return "".join(rows)


def factorial_table_html(f: Factorial) -> str:
    rows = ["<table><tr><th>contrast</th><th>ratio [95 % interval]</th><th>verdict</th></tr>"]
    for kind, estimates in (("main effect", f.main_effects), ("interaction", f.interactions)):
        for e in estimates:
            cls = verdict_class(e.verdict) if kind == "main effect" else ("hurts" if e.verdict == "interact" else "none")
            rows.append(f"<tr><td>{kind}: {esc(e.label)}</td>"
                        f"<td class=\"num\">{esc(effect_text(e))}</td>"
                        f'<td class="verdict"><span class="chip {cls}">{esc(e.verdict)}</span></td></tr>')
    rows.append("</table><p class=\"meta\">Main effect: geometric mean of the cells with the factor on ÷ "
                "with it off. Interaction: (AB · base) ÷ (A · B) of the cell medians; 1 means the two "
                "effects multiply independently. Intervals: bootstrap of processes then samples in every cell.</p>")
    return "".join(rows)


def controls_html(report: Report) -> str:
    if not report.controls:
        return ""
    rows = "".join(
        f"<tr><td>{esc(c.when.strftime('%Y-%m-%d %H:%M'))}</td><td>{esc(c.host)}</td><td>{esc(c.experiment)}</td>"
        f"<td>{esc(c.kind)}</td><td>{c.truth:.2f}x</td>"
        f'<td class="{verdict_class(c.verdict)}">{esc(c.text)}</td>'
        f"<td>{'yes' if c.covered else '<b>no</b>'}</td>"
        f"<td>{'' if c.kind == 'A/A' else ('yes' if c.detected else '<b>no</b>')}</td></tr>"
        for c in report.controls)
    return ('<h3>Controls of suite ' + esc(report.run.suite_name) + "</h3>"
            '<p class="meta">Every run checks its own intervals: an A/A control (identical arms: truth 1.00x) '
            "and a positive control (the ON arm slower by a known amount) should have the truth inside their "
            "95 % interval about 95 % of the time. "
            + esc("; ".join(controls_summary(report.controls))) + ".</p>"
            "<table><tr><th>run</th><th>host</th><th>control</th><th>kind</th><th>truth</th><th>measured</th>"
            "<th>truth inside</th><th>detected</th></tr>" + rows + "</table>")


def software_changes_html(trends: Trends) -> str:
    libtorch = [c for c in trends.changes if c.kind == "LibTorch"]
    git = [c for c in trends.changes if c.kind == "git"]
    text = []
    for c in libtorch:
        text.append(f"{c.when:%Y-%m-%d} on {c.host}: {c.text}")
    summary = f"{len(git)} git revision change(s)"
    if git:
        summary += " (dotted lines)" if trends.draws_git_changes else " (too many to draw)"
    items = "".join(f"<li>{esc(t)}</li>" for t in text) + f"<li>{esc(summary)}</li>"
    return f'<p class="meta">Software changes:</p><ul class="meta">{items}</ul>'


def throughput_table_html(c: HostComparison) -> str:
    """tunebench's figures as it printed them (text), per workload best host first, with its
    rankings and the ratio of every two hosts."""
    head = "<tr><th>host</th><th>cores</th><th>items/s</th><th>items/s per core</th>"
    head += "<th>items per currency unit</th><th>cost per 1M items</th>" if c.priced else ""
    head += "<th>energy per item (J)</th><th>runs (samples)</th><th>run-to-run spread</th><th>latest run</th></tr>"
    parts = [f'<p class="meta">Suite {esc(c.suite)}, every finished run of each host. Figures: the geometric mean '
             "of the host's run medians with its 95 % interval (Student's t on the log run medians: the spread "
             "from run to run, or the noise floor calibrate stored for a host with one run); ratios between hosts: "
             "Welch's t on the log run medians; hosts share a rank when their ratio's interval contains 1 or a "
             "host's spread is unknown.</p>"]
    for workload in dict.fromkeys(r.workload for r in c.rows):
        parts.append(f"<h3>{esc(workload)} <span class=\"meta\">(benchmark {esc(c.benchmarks.get(workload, ''))})"
                     '</span></h3><table class="hosts">' + head)
        for r in (r for r in c.rows if r.workload == workload):
            price_cells = ""
            if c.priced:
                price_cells = (f'<td class="num">{figure_html(r.items_per_unit.text or "no price")}</td>'
                               f'<td class="num">{figure_html(r.cost_per_million.text or "no price")}</td>')
            parts.append(f"<tr><td>{esc(r.host)}</td><td class=\"num\">{esc(r.cores)}</td>"
                         f'<td class="num">{figure_html(r.items_per_second.text)}</td>'
                         f'<td class="num">{figure_html(r.per_core.text)}</td>'
                         f'{price_cells}<td class="num">{figure_html(r.energy.text)}</td>'
                         f'<td class="num">{r.runs} ({r.samples} samples, {r.processes} processes)</td>'
                         f"<td>{esc(r.spread or '-')}</td>"
                         f"<td><code>{esc(r.run_uuid[:8])}</code></td></tr>")
        parts.append("</table><ul>")
        parts.append(f"<li>ranking by items/s: {esc('; '.join(c.rankings.get(workload, [])))}</li>")
        if c.price_rankings.get(workload):
            parts.append(f"<li>ranking by items per currency unit: {esc('; '.join(c.price_rankings[workload]))}</li>")
        parts.extend(f"<li>{esc(line)}</li>" for line in c.pairs.get(workload, []))
        parts.append("</ul>")
    return "".join(parts)


def threads_table_html(points: list[ThreadPoint]) -> str:
    rows = ["<table><tr><th>workload</th><th>host</th><th>threads</th><th>median s / iteration</th>"
            "<th>speed-up vs 1 thread</th><th>trials</th></tr>"]
    for p in points:
        one = next((q for q in points if q.host == p.host and q.workload == p.workload and q.threads == 1), None)
        speedup = f"{one.median_seconds / p.median_seconds:.3g}×" if one else ""
        rows.append(f"<tr><td>{esc(workload_label(p.workload))}</td><td>{esc(p.host)}</td>"
                    f"<td class=\"num\">{p.threads}</td><td class=\"num\">{p.median_seconds:.4g}</td>"
                    f"<td class=\"num\">{speedup}</td><td class=\"num\">{p.trials}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def stored_effect_html(e) -> str:
    """An effect of a recommendation as tune printed it, escaped, its interval kept on one line."""
    numbers, bracket, words = stored_effect_text(e).partition("] ")
    return figure_html(numbers + "]") + " " + esc(words) if bracket else figure_html(numbers)


FATE_CLASSES = {KEPT: "helps", DROPPED: "none", UNDECIDED: "imprecise"}


def tuning_html(t: Tuning, png: bytes | None) -> str:
    """One recommendation: whether its stages' controls certify it (first), the settings, the final
    measurement beside the ladder's product, the ladder, what was left out, the stages, how to apply."""
    r = t.recommendation
    parts = [f"<h3>{breakable(t.model or r.get('model', '?'))} <span class=\"meta\">({esc(r.get('mode', '?'))}, "
             f"batch {esc(r.get('batch', '?'))})</span></h3>",
             f'<p class="meta">Tuning <code>{esc(t.uuid)}</code> of {esc(t.created_at)}'
             + (f" · budget {esc(r['budget_s'])} s" if isinstance(r.get("budget_s"), (int, float)) else "")
             + f" · <code>tunebench show {esc(t.uuid[:8])}</code> prints it as tune did</p>"]
    uncertified = not_certified_text(r)
    if uncertified:
        parts.append(f'<div class="warn"><b>NOT CERTIFIED.</b> {esc(uncertified)}</div>')
    settings = r.get("settings") if isinstance(r.get("settings"), dict) else {}
    if settings:
        parts.append(f'<p><b>Recommended:</b> <code>{esc(settings_text(r.get("resolved") or settings))}</code></p>')
    else:
        parts.append("<p><b>Recommended:</b> keep the defaults: no knob helped alone on this host.</p>")
    parts.append(final_against_product_html(r))
    parts.append(image_html(png, "the ladder: each knob added in turn, with the cumulative speed-up"))
    parts.append(ladder_table_html(r))
    left_out = [x for x in (r.get("left_out") or []) if isinstance(x, dict)]
    if left_out:
        parts.append('<p class="meta">Helped alone in the screen, and left out of the ladder:</p>'
                     "<table><tr><th>knob</th><th>effect alone [95 % interval]</th><th>why left out</th></tr>"
                     + "".join(f"<tr><td>{esc(x.get('knob', '?'))}</td>"
                               f'<td class="num">{stored_effect_html(x)}</td><td>{esc(x.get("why", ""))}</td></tr>'
                               for x in left_out) + "</table>")
    parts.append(stages_html(r))
    apply = r.get("apply") if isinstance(r.get("apply"), dict) else {}
    code = [("launch", apply.get("launch"))] if apply.get("launch") else []
    code += [("Python", line) for line in apply.get("python") or []] + [("C++", line) for line in apply.get("cpp") or []]
    if code:
        parts.append("<h4>How to apply it</h4><table>" + "".join(
            f"<tr><th>{esc(k)}</th><td><code>{esc(v)}</code></td></tr>" for k, v in code) + "</table>")
    return "".join(p for p in parts if p)


def final_against_product_html(r: dict) -> str:
    """The final measurement against the defaults beside the ladder's product, and whether they agree
    (their intervals overlap) as tune printed it; then the other metrics and the best knob alone."""
    finals = final_effects(r)
    product = ladder_product(r)
    time = dict(finals).get("time")
    parts = []
    if time is not None or product is not None:
        agree = agreement(r)
        verdict = ('<span class="chip helps">agree</span>' if agree
                   else '<span class="chip hurts">DISAGREE</span>' if agree is False
                   else "not compared (no kept step, or an end without an interval)")
        parts.append("<table><tr><th>time: the final measurement against the defaults (the figure to act on)</th>"
                     "<th>the ladder's product (the kept steps multiplied: an estimate)</th><th>do they agree?</th></tr>"
                     f'<tr><td class="num">{stored_effect_html(time) if time is not None else "not measured"}</td>'
                     f'<td class="num">{stored_effect_html(product) if product is not None else "no kept step"}</td>'
                     f"<td>{verdict}</td></tr></table>")
        line = agreement_line(r)
        if line:
            parts.append(f'<p class="{"warn" if agree is False else "meta"}">{esc(line)}</p>')
    lines = [f"{esc(metric)} against the defaults: {stored_effect_html(e)}" for metric, e in finals if metric != "time"]
    single = r.get("vs_best_single") if isinstance(r.get("vs_best_single"), dict) else {}
    lines += [f"{esc(metric)} against {esc(settings_text(r.get('best_single')))} alone: {stored_effect_html(e)}"
              for metric, e in single.items() if isinstance(e, dict)]
    if lines:
        parts.append('<div class="glance">' + "".join(f"<div>{line}</div>" for line in lines) + "</div>")
    return "".join(parts)


def ladder_table_html(r: dict) -> str:
    steps = ladder_steps(r)
    if not steps:
        return ""
    rows = []
    for i, s in enumerate(steps):
        fate = step_fate(s)
        more = f"<br><small>sampled on {esc(s['sampled_on'])} time(s)</small>" if s.get("sampled_on") else ""
        cumulative = stored_effect_html(s.get("cumulative")) if fate == KEPT else ""
        rows.append(f'<tr><td class="num">{i + 1}</td><td>{esc(s.get("knob", "?"))}'
                    + (f"=<wbr>{esc(value_text(s['value']))}" if "value" in s else "") + "</td>"
                    f"<td>{breakable(s.get('against', ''))}</td><td class=\"num\">{stored_effect_html(s)}</td>"
                    f'<td class="verdict"><span class="chip {FATE_CLASSES[fate]}">{fate}</span>{more}</td>'
                    f'<td class="num">{cumulative}</td><td>{esc(s.get("why", ""))}</td></tr>')
    return ('<table class="effects"><tr><th>step</th><th>knob</th><th>measured against</th>'
            "<th>effect [95 % interval]</th><th>kept / dropped / left out</th>"
            "<th>cumulative (product of the kept steps)</th><th>why</th></tr>" + "".join(rows) + "</table>")


def stages_html(r: dict) -> str:
    """Each stage's run and whether its controls certify it, as tunebench stored it."""
    runs = stages(r)
    if not runs:
        return ""
    rows = []
    for s in runs:
        line = certification_line(s.get("certification"))
        cell = (f"<b>{esc(line)}</b>" if is_not_certified(s.get("certification"))
                else esc(line) if line else "no controls in this stage: nothing certified or not")
        rows.append(f"<tr><td>{esc(s.get('stage', '?'))}</td><td><code>{esc(str(s.get('run', ''))[:8])}</code></td>"
                    f"<td>{cell}</td></tr>")
    return ("<table><tr><th>stage</th><th>run (<code>tunebench show RUN</code>)</th><th>its controls</th></tr>"
            + "".join(rows) + "</table>")
