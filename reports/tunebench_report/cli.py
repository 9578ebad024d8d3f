"""The command line: render.py's arguments, the figures written beside the page, exit codes.

    render.py (--db PATH | --tables FILE) --out DIR [--run RUN|latest] [--hosts H ...] [--hosts-json FILE]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from .assemble import Report, build_report
from .figures import CutText, plot_factorial, plot_forest, plot_ladder, plot_thread_sweep, plot_throughput, plot_trends
from .hosts import load_host_comparison
from .html_page import render_html
from .load import ReportError, open_database, read_tables
from .markdown_summary import render_markdown

FIGURE_NAMES = ("forest.png", "trends.png", "hosts.png", "threads.png", "ladder.png")


def drawn(name: str, plot, *args):
    """plot(*args), saying on stderr each text of the figure that its edge cuts."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CutText)
        png = plot(*args)
    for w in caught:
        if issubclass(w.category, CutText):
            print(f"render.py: warning: {name}: a text is cut at the figure's edge: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return png


def draw_figures(report: Report) -> dict:
    figures = {}
    if report.experiments and report.run:
        figures["forest.png"] = drawn("forest.png", plot_forest, report.experiments, report.run.hostname)
    for i, f in enumerate(report.factorials):
        if f.main_effects:
            figures[f"factorial-{i + 1}.png"] = drawn(f"factorial-{i + 1}.png", plot_factorial, f)
    if report.trends:
        figures["trends.png"] = drawn("trends.png", plot_trends, report.trends)
    figures["hosts.png"] = drawn("hosts.png", plot_throughput, report.hosts_compared)
    figures["threads.png"] = drawn("threads.png", plot_thread_sweep, report.threads)
    if report.tunings:  # the newest recommendation's ladder; the older ones are tables
        figures["ladder.png"] = drawn("ladder.png", plot_ladder, report.tunings[0])
    return {name: png for name, png in figures.items() if png}


def write_outputs(report: Report, out_dir: Path) -> Path:
    figures = draw_figures(report)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for stale in list(out_dir.glob("factorial-*.png")) + [out_dir / n for n in FIGURE_NAMES]:
            if stale.is_file():
                stale.unlink()
        for name, png in figures.items():
            (out_dir / name).write_bytes(png)
        html_path = (out_dir / "report.html").resolve()
        html_path.write_text(render_html(report, figures), encoding="utf-8")
        (out_dir / "summary.md").write_text(render_markdown(report, html_path), encoding="utf-8")
    except OSError as error:
        raise ReportError(f"--out {out_dir}: cannot write the report ({error.strerror or error})") from None
    return html_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="render.py", description="Render tunebench's stored results as HTML, Markdown and PNG figures.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--db", help="the SQLite results database, read through `tunebench export --format "
                                     "tables` ($TUNEBENCH_BINARY, else the build beside this checkout)")
    source.add_argument("--tables", metavar="FILE",
                        help="the stored rows as `tunebench export --format tables` wrote them (`tunebench "
                             "report` writes and passes it)")
    parser.add_argument("--out", required=True, type=Path, help="directory for report.html, summary.md, *.png")
    parser.add_argument("--run", default="latest", help="run for claims vs measured: latest (default), a uuid or a prefix")
    parser.add_argument("--hosts", nargs="+", metavar="H", help="only these hostnames (default: all)")
    parser.add_argument("--hosts-json", metavar="FILE",
                        help="hosts side by side as tunebench computed them (`tunebench compare --hosts H1 H2 "
                             "--format json`; `tunebench report` writes and passes it)")
    args = parser.parse_args(argv)
    try:
        hosts_compared = load_host_comparison(args.hosts_json) if args.hosts_json else None
        tables = read_tables(args.tables) if args.tables else open_database(args.db)
        report = build_report(tables, args.run, args.hosts, hosts_compared)
        html_path = write_outputs(report, args.out)
    except ReportError as error:
        print(f"render.py: error: {error}", file=sys.stderr)
        return 2
    summary = args.out / "summary.md"
    print(f"report: {len(report.experiments)} experiment(s) of run "
          f"{report.run.uuid if report.run else '(none)'}, {len(report.runs)} run(s) on "
          f"{len(report.hosts)} host(s); summary {summary}")
    print(html_path)
    return 0
