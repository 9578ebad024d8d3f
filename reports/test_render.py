#!/usr/bin/env python3
"""Tests of reports/render.py, its package tunebench_report, and bench/generate_history.py
(standard library unittest).

    .venv/bin/python -m unittest discover -s reports -p 'test_*.py' -v

Databases are generated here through tunebench (generate_history.py stores synthetic runs with
`tunebench import`, which computes their effects, then calibrates and checks them), small enough
that a whole run of this file takes a minute or two on two cores. Every number on the page is one
tunebench stored: these tests check what is drawn and how it is escaped, not arithmetic (the
statistics are tested in tests/test_stats.cpp and tests/test_storage.cpp). Outputs go to
$TUNEBENCH_TEST_OUT (default: a new temporary directory), one folder per test; the path is
printed at the start.

Environment:
  TUNEBENCH_BINARY    path to a built tunebench (default build/debian/tunebench); without one
                      every test that needs a database is skipped
  TUNEBENCH_TEST_OUT  where outputs go (the screenshot is OUT/screenshot/report.png; the whole page at
                      1,024, 1,280 and 1,920 pixels wide OUT/widths-nightly/report-1024.png, …,
                      and the same under OUT/widths-two-hosts/ and OUT/widths-smoke/, which also
                      holds the smoke run's first screen at 1,280 pixels, first-screen-1280.png)
  TUNEBENCH_SMOKE_DB  a database of a real smoke run (ci/quickstart.sh writes results/tunebench.sqlite)
                      for the page-width test; without it, a smoke run's effects put in a generated
                      run
"""

from __future__ import annotations

import contextlib
import html
import html.parser
import io
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The synthetic histories come from bench/generate_history.py (through tunebench): fixtures, not
# part of the report.
sys.path.insert(0, str(HERE.parent / "bench"))
sys.path.insert(0, str(HERE))

import generate_history  # noqa: E402
import render  # noqa: E402
from tunebench_report import figures, html_page, markdown_summary  # noqa: E402  (figures chooses matplotlib's backend first)
import matplotlib.text  # noqa: E402
from tunebench_report.assemble import build_report  # noqa: E402
from tunebench_report.html_page import breakable, esc, figure_html  # noqa: E402
from tunebench_report.load import open_database, read_tables  # noqa: E402
from tunebench_report.markdown_summary import md  # noqa: E402
from tunebench_report.stored import (HELPS, INSUFFICIENT, Effect, load_check, load_runs, parse_cell,  # noqa: E402
                                     regression_marks)
from tunebench_report.text import effect_text, percent  # noqa: E402

OUT = Path(os.environ.get("TUNEBENCH_TEST_OUT") or tempfile.mkdtemp(prefix="tunebench-report-tests-")).resolve()
BINARY = generate_history.tunebench_binary()
HAVE_BINARY = Path(BINARY).is_file() and os.access(BINARY, os.X_OK)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DATABASES = OUT / "databases"
XSS = "<script>alert(1)</script>"


def setUpModule():
    if not HAVE_BINARY:
        raise unittest.SkipTest(f"no tunebench at {BINARY}: build it or set TUNEBENCH_BINARY")
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"\ntest outputs: {OUT}", file=sys.stderr)
    if DATABASES.exists():
        shutil.rmtree(DATABASES)
    DATABASES.mkdir()
    # One run; a nightly history (30 runs); two hosts side by side (5 nights each).
    generate_history.generate(DATABASES / "one-run.sqlite", runs=1, trials=48, samples=5, hosts=1, seed=1)
    generate_history.generate(DATABASES / "nightly.sqlite", runs=30, trials=48, samples=5, hosts=1, seed=2)
    generate_history.generate(DATABASES / "two-hosts.sqlite", runs=5, trials=48, samples=5, hosts=2, seed=3,
                              check=False)
    # The schema and no runs: the one-run database with every row deleted (`show` opens a
    # database read-only, so it no longer gives an empty file its schema).
    shutil.copyfile(DATABASES / "one-run.sqlite", DATABASES / "schema-only.sqlite")
    with sqlite3.connect(DATABASES / "schema-only.sqlite") as con:
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            con.execute(f'DELETE FROM "{table}"')


# A smoke run's effects, as `tunebench show` printed them for one on a 2-core VM, put in place of
# the one-run database's: two extreme effects, paired verdicts with their widths, an A/A that holds
# 1 and a +3 % control, all near 1 but for the extremes.
SMOKE_LIKE = {
    "omp_threads.gpt-small-infer": (0.0053, 0.0051, 0.0055, "helps", "0.0053x [0.0051, 0.0055] helps"),
    "allocator.dlrm-kaggle-train": (106.0, 98.1, 115.0, "hurts", "106x [98.1, 115] hurts"),
    "zero_grad_none.gpt-small-train": (1.03, 1.0, 1.06, "not precise enough",
                                       "1.03x [1.00, 1.06] not precise enough (±3.0%)"),
    "zero_grad_none.resnet50-full-train": (0.95, 0.89, 1.02, "not precise enough",
                                           "0.95x [0.89, 1.02] not precise enough (±6.9%)"),
    "no_grad.dlrm-kaggle-infer": (1.004, 0.992, 1.016, "no effect beyond ±2%", "1.004x [0.992, 1.016] no effect beyond ±2%"),
    "no_grad.gpt-small-infer": (0.85, 0.82, 0.88, "helps", "0.85x [0.82, 0.88] helps"),
    "aa.no_grad.resnet50-full-infer": (0.99, 0.97, 1.01, "inconclusive", "0.99x [0.97, 1.01] holds 1 (±2.0%)"),
}


def smoke_like_tables() -> dict:
    """The one-run database's export with the time effects of SMOKE_LIKE."""
    document = export_tables(DATABASES / "one-run.sqlite")
    for e in document["effects"]:
        if e["metric"] == "time" and e["experiment"] in SMOKE_LIKE:
            e["ratio"], e["lo"], e["hi"], e["verdict"], e["text"] = SMOKE_LIKE[e["experiment"]]
    return document


def show_json(db: Path, run: str) -> dict:
    return json.loads(subprocess.run([BINARY, "show", run, "--db", str(db), "--json"],
                                     capture_output=True, text=True, check=True).stdout)


def hosts_json(db: Path, out: Path, *hosts: str, prices: dict | None = None) -> Path:
    """The comparison of `hosts` as `tunebench compare --hosts … --format json` prints it."""
    out.mkdir(parents=True, exist_ok=True)
    args = [BINARY, "compare", "--hosts", *hosts, "--db", str(db), "--format", "json"]
    if prices is not None:
        (out / "prices.json").write_text(json.dumps(prices))
        args += ["--prices", str(out / "prices.json")]
    path = out / "hosts.json"
    path.write_text(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    return path


def export_tables(db: Path) -> dict:
    """The stored rows as `tunebench export --format tables` hands them to the report."""
    return json.loads(subprocess.run([BINARY, "export", "--format", "tables", "--db", str(db)],
                                     capture_output=True, text=True, check=True).stdout)


def tunebench_report(*args: str) -> subprocess.CompletedProcess:
    """`tunebench report`, which computes the hosts side by side and runs render.py with this Python."""
    return subprocess.run([BINARY, "report", *args], capture_output=True, text=True,
                          env={**os.environ, "TUNEBENCH_PYTHON": sys.executable})


def copy_database(name: str, test: str) -> Path:
    target = OUT / test / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DATABASES / name, target)
    return target


def render_cli(*args: str) -> tuple[int, str, str]:
    """render.main in this process: (exit code, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = render.main(list(args))
        except SystemExit as exit_:  # argparse
            code = exit_.code
    return code, stdout.getvalue(), stderr.getvalue()


class RenderCase(unittest.TestCase):
    def render(self, db: Path | str, *extra: str, name: str | None = None) -> tuple[Path, str, str]:
        return self.render_from(["--db", str(db)], *extra, name=name)

    def render_tables(self, document: dict, *extra: str, name: str | None = None) -> tuple[Path, str, str]:
        """Renders an export (a fixture made from `tunebench export --format tables`) with --tables."""
        out = OUT / (name or self._testMethodName)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "tables.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        return self.render_from(["--tables", str(path)], *extra, name=name)

    def render_from(self, source: list[str], *extra: str, name: str | None = None) -> tuple[Path, str, str]:
        out = OUT / (name or self._testMethodName)
        code, stdout, stderr = render_cli(*source, "--out", str(out), *extra)
        self.assertEqual(code, 0, stderr)
        self.assertNotIn("Traceback", stderr)
        # Every figure measured its texts against its edges as it was drawn (figures.png_bytes).
        self.assertNotIn("cut at the figure's edge", stderr)
        html_path = Path(stdout.strip().splitlines()[-1])
        self.assertEqual(html_path, (out / "report.html").resolve(), "the last line is the HTML path")
        return out, html_path.read_text(encoding="utf-8"), (out / "summary.md").read_text(encoding="utf-8")

    def assertSelfContained(self, page: str):
        for external in ('src="http', "src='http", 'href="http', "<link", "<script", "@import", "url("):
            self.assertNotIn(external, page)

    def assertError(self, args: list[str], fragment: str):
        code, stdout, stderr = render_cli(*args)
        self.assertEqual(code, 2)
        self.assertIn(fragment, stderr)
        self.assertTrue(stderr.startswith("render.py: error: "), stderr)
        self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
        self.assertNotIn("Traceback", stderr)


# ----------------------------------------------------------------------------------------------
# Pure functions, with hand-computed answers
# ----------------------------------------------------------------------------------------------


class TextTest(unittest.TestCase):
    def test_effect_text_is_the_stored_text_without_the_verdict(self):
        e = Effect("time", "on vs off", 0.62, 0.58, 0.66, HELPS, text="0.62x [0.58, 0.66] helps")
        self.assertEqual(effect_text(e), "0.62x [0.58, 0.66]")
        e = Effect("time", "on vs off", 1.05, math.nan, math.nan, INSUFFICIENT,
                          text="1.05x [no interval] insufficient data")
        self.assertEqual(effect_text(e), "1.05x [no interval]")

    def test_parse_cell(self):
        self.assertEqual(parse_cell("a=on,b=off"), {"a": True, "b": False})
        self.assertIsNone(parse_cell("on"))
        self.assertIsNone(parse_cell("a=maybe"))

    def test_markup_that_lets_a_narrow_window_wrap(self):
        # A figure wraps between its value and its interval, never inside the interval.
        self.assertEqual(figure_html("812 [799, 826]"), '812 <span class="interval">[799, 826]</span>')
        self.assertEqual(figure_html("not measured"), "not measured")
        self.assertEqual(figure_html("<b> [1, 2]"), '&lt;b&gt; <span class="interval">[1, 2]</span>')
        # A name breaks after its dots, pluses and commas, and is escaped first.
        self.assertEqual(breakable("a+b.c=on,d=off<x>"), "a+<wbr>b.<wbr>c=on,<wbr>d=off&lt;x&gt;")



class ForestAxisTest(unittest.TestCase):
    def test_the_axis_fits_the_bulk_of_the_effects(self):
        # 0.0053x, 106x and 3.0x lie past 2.5x: the axis fits 0.8x..1.3x, padded 5 %.
        lo, hi = figures.bulk_limits([0.0053, 106, 0.8, 1.3, 3.0])
        self.assertAlmostEqual(lo, 0.8 / 1.05)
        self.assertAlmostEqual(hi, 1.3 * 1.05)
        # never narrower than ±10 %, never wider than 0.4x..2.5x
        self.assertEqual(figures.bulk_limits([0.3, 1.0]), (1 / 1.1 / 1.05, 1.1 * 1.05))
        self.assertEqual(figures.bulk_limits([0.41, 2.4]), (0.4, 2.5))

    def test_ticks_a_person_reads(self):
        self.assertEqual(figures.ratio_ticks(0.8, 1.25, 8), [0.8, 0.9, 1.0, 1.1, 1.25])
        self.assertEqual(figures.ratio_ticks(0.4, 2.5, 8), [0.5, 0.67, 1.0, 1.5, 2])


class FigureTextTest(unittest.TestCase):
    """Each figure measures its texts against its own edges when it is drawn."""

    def test_a_text_past_the_edge_is_found(self):
        import matplotlib.pyplot as plt
        fig = plt.figure(figsize=(4, 2))
        fig.text(0.02, 0.5, "inside")
        self.assertEqual(figures.cut_texts(fig), [])
        fig.text(0.9, 0.5, "a verdict that runs past the right edge")
        fig.add_axes([0.1, 0.3, 0.8, 0.4]).set_title("a title far too long to fit in four inches of figure, "
                                                     "centred on it and cut at both ends")
        cut = figures.cut_texts(fig)
        self.assertEqual(len(cut), 2, cut)
        self.assertIn("'a verdict that runs past the right edge' spans x 360 to", cut[0] + cut[1])
        with self.assertWarns(figures.CutText):
            figures.png_bytes(fig)


# ----------------------------------------------------------------------------------------------
# Rendering generated databases
# ----------------------------------------------------------------------------------------------


class RenderTest(RenderCase):
    def test_one_run(self):
        out, page, summary = self.render(DATABASES / "one-run.sqlite")
        for png in ("forest.png", "factorial-1.png", "threads.png"):
            self.assertTrue((out / png).stat().st_size > 10_000, png)
        self.assertFalse((out / "trends.png").exists())
        self.assertSelfContained(page)
        self.assertIn("data:image/png;base64,", page)
        self.assertIn("1. Claims vs measured", page)
        self.assertIn("Trends need at least 2 runs", page)
        # Without tunebench's comparison the page draws no hosts and says where they come from.
        self.assertFalse((out / "hosts.png").exists())
        self.assertIn("Hosts are compared by tunebench", page)
        # schema version 2, but neither calibrated nor checked
        self.assertIn("5. Regression check of this run", page)
        self.assertIn("No findings stored for this run", page)
        self.assertIn("Suite &#x27;nightly&#x27; is not calibrated on this host and software", page)
        self.assertIn("tunebench calibrate --suite FILE", page)
        self.assertIn("No regression is marked", page)
        self.assertIn("No findings stored for this run", summary)
        self.assertIn("is not calibrated on this host and software", summary)
        self.assertNotIn("not built yet", page + summary)
        self.assertIn("| verdict | experiment |", summary)
        self.assertIn("helps", summary)
        # every printed effect carries its interval
        for line in summary.splitlines():
            if line.startswith("| 🟢") or line.startswith("| 🔴") or line.startswith("| ⚪"):
                self.assertRegex(line, r"\d\.\d+x \\\[\d\.\d+, \d\.\d+\\\]")

    def test_the_forest_of_a_smoke_run(self):
        """A smoke run's forest plot: its axis fits the effects near 1, not the two extremes, which
        sit at its edges with their numbers; rows grouped as `show` groups them; nothing cut at the
        figure's edges, whatever the verdict's width."""
        out, page, _ = self.render_tables(smoke_like_tables())
        self.assertTrue((out / "forest.png").exists())
        report = build_report(read_tables(str(out / "tables.json")), "latest", None, None)
        fig = figures.forest_figure(report.experiments, report.run.hostname)
        time_axis = next(ax for ax in fig.axes if ax.get_title().startswith("time per iteration"))
        lo, hi = time_axis.get_xlim()
        # The bulk of the effects: 0.63x [0.62, 0.64] to 1.06x (1.049 the +3 % control's end), each
        # padded 5 %, and at least ±10 %.
        self.assertAlmostEqual(lo, 0.6191434377005061 / 1.05, places=6)
        self.assertAlmostEqual(hi, 1.1 * 1.05, places=6)
        self.assertEqual([t.get_text() for t in time_axis.get_xticklabels()], ["0.67×", "0.8×", "0.9×", "1×", "1.1×"])
        # 5 % apart is 10 pixels and more in a window 1,280 pixels wide (the page shows the PNG at
        # most 1,248 of its 1,350 pixels wide there).
        x = time_axis.transData.transform([(1.0, 0), (1.05, 0)])[:, 0]
        self.assertGreater((x[1] - x[0]) * 1248 / fig.bbox.width, 10)
        texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
        self.assertIn("0.0053x [0.0051, 0.0055]", texts)  # at the left edge, with its interval
        self.assertIn("106x [98.1, 115]", texts)  # at the right edge
        self.assertIn("not precise enough (±3.0%)", texts)  # the stored words, their width with them
        self.assertIn("holds 1 (±2.0%)", texts)  # the A/A in its own words, not "inconclusive"
        self.assertNotIn("inconclusive", texts)
        self.assertIn("<b>Controls:</b>", page)
        self.assertNotIn("<b>Inconclusive:</b>", page)
        headings = [t for t in texts if t.endswith(")") and t.split(" (")[0] in figures.FOREST_GROUPS.values()]
        self.assertEqual(headings, ["controls (2)", "helps (7)", "hurts (1)", "no effect, or none beyond ±2 % (1)",
                                    "not precise enough, or inconclusive (2)"])
        # within a group the largest effect first
        helps = texts.index("helps (7)")
        self.assertLess(texts.index("omp_threads.gpt-small-infer", helps), texts.index("no_grad.gpt-small-infer", helps))

    def test_the_runs_certification_comes_first(self):
        """The page and the summary say what tunebench stored: whether the run's controls certify
        it, before any verdict; a run they do not certify says its verdicts are not certified."""
        for db in ("one-run.sqlite", "nightly.sqlite"):
            certification = show_json(DATABASES / db, "latest")["certification"]
            self.assertTrue(certification, f"{db}: the generated runs have both controls")
            _, page, summary = self.render(DATABASES / db, name=f"certification-{db}")
            why = certification.split(": ", 1)[1]
            heading = ("Not certified by its controls, nor any verdict of this run:"
                       if certification.startswith("not certified") else "Certified by its controls:")
            self.assertIn(heading, page)
            self.assertIn(html.escape(why), page)
            self.assertLess(page.index(heading), page.index("1. Claims vs measured"))
            self.assertIn(heading, summary)
        # A run whose stored certification says it is not certified shows it so.
        db = OUT / "not-certified.sqlite"
        shutil.copyfile(DATABASES / "one-run.sqlite", db)
        with contextlib.closing(sqlite3.connect(db)) as con, con:
            con.execute("UPDATE runs SET certification = 'not certified: A/A x 1.010x [0.980, 1.041] ±3.1% "
                        "is wider than ±2%'")
        _, page, summary = self.render(db, name="not-certified")
        self.assertIn('<div class="warn"><b>Not certified by its controls, nor any verdict of this run:</b> '
                      "A/A x 1.010x [0.980, 1.041] ±3.1% is wider than ±2%</div>", page)
        self.assertIn("**Not certified by its controls, nor any verdict of this run:**", summary)

    def test_nightly_history(self):
        out, page, summary = self.render(DATABASES / "nightly.sqlite")
        self.assertTrue((out / "trends.png").stat().st_size > 50_000)
        self.assertIn("LibTorch 1.13.0 → 2.1.0", page)
        self.assertIn("git revision change", page)
        self.assertNotIn("Regressions are not marked", page)
        self.assertNotIn("Trends need at least 2 runs", page)
        # Both controls over the 30 nights, each run's row with the truth it should contain.
        self.assertIn("Controls of suite nightly", page)
        self.assertEqual(page.count("<td>1.03x</td>"), 30)
        self.assertEqual(page.count("<td>1.00x</td>"), 30)
        self.assertRegex(summary, r"A/A: the truth inside \d+ of 30; \+3%: the truth inside \d+ of 30, "
                                  r"detected in \d+ of 30")
        with contextlib.closing(sqlite3.connect(DATABASES / "nightly.sqlite")) as con:
            first = con.execute("SELECT uuid FROM runs ORDER BY started_at LIMIT 1").fetchone()[0]
        _, page, _ = self.render(DATABASES / "nightly.sqlite", "--run", first[:12], name="nightly_first_run")
        self.assertIn(first, page)

    def test_noise_floors_of_the_latest_run(self):
        db = DATABASES / "nightly.sqlite"
        with contextlib.closing(sqlite3.connect(db)) as con:
            latest = con.execute("SELECT uuid, host_id, software_id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
            floors = con.execute("SELECT experiment, arm, runs, sigma_log, false_alarm, power, baseline_runs, "
                                 "min_detectable, calibrated_at FROM noise_floors WHERE host_id = ? AND "
                                 "software_id = ? AND suite_name = 'nightly'", latest[1:]).fetchall()
            findings = con.execute("SELECT COUNT(*) FROM regressions WHERE run_uuid = ?", latest[:1]).fetchone()[0]
        self.assertEqual(len(floors), 24, "tunebench calibrate stored a floor for every arm of the nightly suite")
        _, page, summary = self.render(db)
        self.assertIn("<h3>Noise floors</h3>", page)
        for experiment, arm, runs, sigma, false_alarm, power, baseline, detectable, at in floors:
            spread, smallest = percent(math.expm1(sigma)), percent(detectable)
            self.assertIn(f'<tr><td>{experiment}</td><td>{arm}</td><td class="num">{spread}</td>'
                          f'<td class="num">{smallest}</td></tr>', page)
            self.assertIn(f"| {md(experiment)} | {md(arm)} | {spread} | {smallest} |", summary)
        runs, _, false_alarm, power, baseline, _, at = floors[0][2:]
        self.assertEqual((runs, false_alarm, power, baseline), (5, 0.01, 0.8, 5))
        for text in (page, summary):
            self.assertIn(f"Noise floors from 5 A/A runs (calibrated {at})", text)
            self.assertIn("with probability 80.0 % at a 1.0 % false-alarm rate per run", text)
            self.assertIn("against 5 baseline runs", text)
            if not findings:
                self.assertIn("No findings stored for this run", text)

    def test_findings_of_check(self):
        db = copy_database("nightly.sqlite", self._testMethodName)
        with contextlib.closing(sqlite3.connect(db)) as con:
            # GPT slows 12 % on the 10th night (a new git revision): check --across-software finds it.
            gpt_night = con.execute("SELECT uuid FROM runs ORDER BY started_at LIMIT 1 OFFSET 9").fetchone()[0]
            rows = con.execute("SELECT experiment, arm, kind, detail FROM regressions "
                               "WHERE run_uuid = ? ORDER BY id", (gpt_night,)).fetchall()
            marked = con.execute("SELECT COUNT(DISTINCT run_uuid || '|' || experiment || '|' || arm) FROM regressions "
                                 "WHERE kind IN ('regression', 'step change')").fetchone()[0]
            # a finding that is not a slowdown of the run: listed, never marked
            con.execute("INSERT INTO regressions (run_uuid, experiment, arm, kind, detail, baseline, threshold, "
                        "checked_at) VALUES (?, 'no_grad.resnet50-full-infer', '', 'stopped helping', "
                        "'no_grad.resnet50-full-infer (time on vs off): 0.86x [0.84, 0.88] helps → 1.00x "
                        "[0.98, 1.02] no measurable effect', '[]', 0.05, '2025-01-10T03:00:00Z')", (gpt_night,))
            con.commit()
        # Checked as it happened, before its software was calibrated: a slowdown no floor or stage 2
        # confirms is stored as "unconfirmed" (check exits 3), not as a regression.
        regressions = [r for r in rows if r[2] in ("regression", "unconfirmed")]
        self.assertTrue(regressions, "tunebench check found the GPT slowdown")
        self.assertTrue(all("gpt" in r[0] for r in regressions), regressions)
        _, page, summary = self.render(db, "--run", gpt_night)
        self.assertIn("<h3>Found by tunebench check</h3>", page)
        for experiment, arm, kind, detail in rows:
            cls = "none" if kind == "stopped helping" else "hurts"
            self.assertIn(f'<span class="chip {cls}">{kind}</span></td><td>{esc(experiment)}</td>'
                          f"<td>{esc(arm)}</td><td>{esc(detail)}</td>", page)
            self.assertIn(f"- **{kind}** {md(experiment)}" + (f" ({md(arm)})" if arm else "")
                          + f": {md(detail)}", summary)
        self.assertIn('<span class="chip none">stopped helping</span></td><td>no_grad.resnet50-full-infer</td>', page)
        self.assertIn("- **stopped helping** no\\_grad.resnet50-full-infer: no\\_grad", summary)
        self.assertIn("Found by tunebench check</a>:</b>", page)  # at a glance, at the top
        self.assertIn(f"{marked} regression(s) and step change(s) found by `tunebench check` are marked ▼.", page)
        # marks: regressions and step changes, per run, experiment and arm; not 'stopped helping'
        marks, _ = regression_marks(open_database(str(db)))
        self.assertEqual(len(marks), marked)
        # an unconfirmed slowdown is listed with its words, but marked only once confirmed
        gpt_mark = (gpt_night, regressions[0][0], regressions[0][1])
        if regressions[0][2] == "regression":
            self.assertIn(gpt_mark, marks)
        else:
            self.assertNotIn(gpt_mark, marks)
        self.assertNotIn((gpt_night, "no_grad.resnet50-full-infer", ""), marks)

    def test_no_effects_stored(self):
        # tunebench hands over no effects (their tables absent from the export): no effect is
        # drawn, and the page says so plainly. (tunebench itself reads an older file through a
        # migrated copy, which computes them; the report never judges a file's version.)
        document = export_tables(DATABASES / "nightly.sqlite")
        del document["effects"], document["arm_summaries"]
        out, page, summary = self.render_tables(document)
        self.assertFalse((out / "trends.png").exists())
        self.assertFalse((out / "factorial-1.png").exists())
        for text in (page, summary):
            self.assertIn("No effects stored in this database.", text)
            self.assertNotIn("schema", text.lower())
        # No verdict outside the regression check's own findings (tunebench check stored them).
        self.assertNotIn('<td class="verdict">', page.split('<h2 id="check">')[0])
        self.assertNotIn("No control in the runs", page)

    def test_two_hosts(self):
        db = DATABASES / "two-hosts.sqlite"
        out = OUT / self._testMethodName
        path = hosts_json(db, out, "nightly-epyc", "nightly-xeon", prices={"nightly-epyc": 4.1, "nightly-xeon": 1.9})
        comparison = json.loads(path.read_text())
        out, page, summary = self.render(db, "--hosts-json", str(path))
        self.assertTrue((out / "hosts.png").stat().st_size > 10_000)
        self.assertIn("items per currency unit", page)
        self.assertNotIn("Only one host", page)
        self.assertNotIn("No prices", page)
        self.assertIn("Energy per item is not measured on these hosts", page)
        # Every figure, ranking and ratio on the page is the text tunebench computed.
        shown = 0
        for w in comparison["workloads"]:
            for f in w["hosts"]:
                for key in ("items_per_second", "items_per_second_per_core", "items_per_currency_unit",
                            "cost_per_million_items"):
                    self.assertIn(f'<td class="num">{figure_html(f[key]["text"])}</td>', page)
                    self.assertRegex(f[key]["text"], r"^[0-9.]+ \[[0-9.]+, [0-9.]+\]$")
                    shown += 1
            for r in w["ranking"]:
                self.assertIn(esc(r["text"]), page)
            self.assertIn(md("; ".join(r["text"] for r in w["ranking"])), summary)
            for p in w["pairs"]:
                self.assertIn(esc(p["line"]), page)
        self.assertGreater(shown, 8)
        # A comparison tunebench could not make is said, not guessed at.
        unavailable = out / "unavailable.json"
        unavailable.write_text(json.dumps({"unavailable": "hosts 'a', 'b' have no suite in common"}))
        _, page, _ = self.render(db, "--hosts-json", str(unavailable), name="two_hosts_unavailable")
        self.assertIn("tunebench could not compare the hosts: hosts &#x27;a&#x27;, &#x27;b&#x27; have no suite", page)

    def test_report_command_hands_the_comparison_over(self):
        """`tunebench report` computes the comparison in C++ and render.py draws it."""
        out = OUT / self._testMethodName
        done = tunebench_report("--db", str(DATABASES / "two-hosts.sqlite"), "--out", str(out),
                                "--hosts", "nightly-epyc")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads((out / "hosts.json").read_text())["hosts"][0]["hostname"], "nightly-epyc")
        # and the stored rows it drew, as `tunebench export --format tables` writes them
        self.assertEqual(json.loads((out / "tables.json").read_text()), export_tables(DATABASES / "two-hosts.sqlite"))
        page = (out / "report.html").read_text(encoding="utf-8")
        self.assertTrue((out / "hosts.png").exists())
        self.assertIn("Only one host (nightly-epyc)", page)
        self.assertIn("Host <b>nightly-epyc</b>", page)
        prices = out / "bad-prices.json"
        prices.write_text('{"nightly-epyc": -3}')
        done = tunebench_report("--db", str(DATABASES / "two-hosts.sqlite"), "--out", str(out), "--prices", str(prices))
        self.assertEqual(done.returncode, 2)
        self.assertIn("prices are positive numbers", done.stderr)

    def test_schema_without_runs(self):
        out, page, summary = self.render(DATABASES / "schema-only.sqlite")
        self.assertIn("no runs yet", page)
        self.assertIn("no runs yet", summary)
        self.assertEqual(list(out.glob("*.png")), [])
        self.assertNotIn("<img", page)

    def test_a_new_column_flows_through_without_a_warning(self):
        """A column tunebench adds to a table reaches the report through the export, by name, and
        changes nothing drawn: no warning, no version note."""
        db = copy_database("nightly.sqlite", self._testMethodName)
        with contextlib.closing(sqlite3.connect(db)) as con:  # a fixture: the next release's columns
            con.execute("ALTER TABLE effects ADD COLUMN spread_note TEXT DEFAULT 'wider on busy hosts'")
            con.execute("ALTER TABLE arm_summaries ADD COLUMN p99_seconds REAL")
            con.execute("ALTER TABLE runs ADD COLUMN scheduler TEXT DEFAULT 'slurm'")
            con.commit()
        document = export_tables(db)
        self.assertEqual(document["tunebench_tables"]["version"], 1)
        self.assertTrue(document["effects"])
        self.assertTrue(all(e["spread_note"] == "wider on busy hosts" for e in document["effects"]))
        self.assertTrue(all(a["p99_seconds"] is None for a in document["arm_summaries"]))
        _, page, summary = self.render(db)
        _, before, before_summary = self.render(DATABASES / "nightly.sqlite", name="new_column_before")

        def same(text: str, path: Path) -> str:
            return text.replace(str(path), "DB").split("<footer>")[0]
        self.assertEqual(same(page, db), same(before, DATABASES / "nightly.sqlite"))
        self.assertEqual(summary.splitlines()[:-1], before_summary.splitlines()[:-1])
        for text in (page, summary):
            self.assertNotIn("schema", text.lower())
            self.assertNotIn("Columns added since", text)

    def test_fresh_database_has_no_version_note(self):
        _, page, summary = self.render(DATABASES / "one-run.sqlite")
        for text in (page, summary):
            self.assertNotIn("schema", text.lower())
            self.assertNotIn("migrate", text)

    def test_empty_file(self):
        empty = OUT / self._testMethodName / "empty.sqlite"
        empty.parent.mkdir(parents=True, exist_ok=True)
        empty.write_bytes(b"")
        _, page, _ = self.render(empty, name="empty_file_out")
        self.assertIn("no tunebench tables", page)

    def test_names_are_escaped(self):
        db = copy_database("one-run.sqlite", self._testMethodName)
        with contextlib.closing(sqlite3.connect(db)) as con:
            for table in ("trials", "arm_summaries", "effects"):
                con.execute(f"UPDATE {table} SET experiment = ? WHERE experiment = 'no_grad.resnet50-full-infer'", (XSS,))
            for table in ("trials", "arm_summaries"):
                con.execute(f"UPDATE {table} SET arm = ? WHERE arm = 'channels_last=on,no_grad=on'",
                            ("channels_last=on,no_grad=on<img src=x onerror=alert(2)>",))
            con.execute("UPDATE effects SET note = ? WHERE position = 0", (f"note {XSS}",))
            con.execute("UPDATE hosts SET hostname = ?", ('<b onmouseover="x">host$x$</b>',))
            con.commit()
        _, page, summary = self.render(db)
        self.assertNotIn(XSS, page)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", page)
        self.assertIn("note &lt;script&gt;alert(1)&lt;/script&gt;", page)
        self.assertNotIn("<img src=x", page)
        self.assertNotIn("<b onmouseover", page)
        self.assertNotIn(XSS, summary)
        self.assertNotIn("<b onmouseover", summary)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", summary)

    def test_findings_and_floors_are_escaped(self):
        db = copy_database("nightly.sqlite", self._testMethodName)
        with contextlib.closing(sqlite3.connect(db)) as con:
            latest, host, software = con.execute(
                "SELECT uuid, host_id, software_id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
            con.execute("INSERT INTO regressions (run_uuid, experiment, arm, kind, ratio, lo, hi, detail, baseline, "
                        "threshold, checked_at) VALUES (?, ?, ?, 'regression', 1.2, NULL, NULL, ?, '[]', 0.05, ?)",
                        (latest, XSS, "off<img src=x onerror=alert(2)>", f"slower: {XSS} | *bold* [x](y)",
                         "<b>2025</b>"))
            con.execute("UPDATE noise_floors SET experiment = ? WHERE experiment = 'no_grad.resnet50-full-infer' "
                        "AND host_id = ? AND software_id = ?", (XSS, host, software))
            con.commit()
        _, page, summary = self.render(db)
        self.assertIn("<h3>Found by tunebench check</h3>", page)
        self.assertNotIn(XSS, page)
        self.assertNotIn("<img src=x", page)
        self.assertNotIn("<b>2025</b>", page)
        self.assertIn("<td>&lt;script&gt;alert(1)&lt;/script&gt;</td><td>off&lt;img src=x onerror=alert(2)&gt;</td>"
                      "<td>slower: &lt;script&gt;alert(1)&lt;/script&gt; | *bold* [x](y)</td>", page)
        self.assertIn('<tr><td>&lt;script&gt;alert(1)&lt;/script&gt;</td><td>off</td><td class="num">', page)
        self.assertIn("regression: &lt;script&gt;alert(1)&lt;/script&gt;", page)  # the glance line
        self.assertSelfContained(page)
        self.assertNotIn(XSS, summary)
        self.assertNotIn("<img src=x", summary)
        self.assertIn("- **regression** &lt;script&gt;alert(1)&lt;/script&gt; (off&lt;img src=x onerror=alert(2)&gt;): "
                      "slower: &lt;script&gt;alert(1)&lt;/script&gt; \\| \\*bold\\* \\[x\\](y)", summary)
        self.assertIn("| &lt;script&gt;alert(1)&lt;/script&gt; | off |", summary)


class SourceTest(unittest.TestCase):
    def test_the_report_has_no_sql_and_no_schema_version(self):
        """The report reads what tunebench exports: no module of it opens SQLite, holds SQL or
        judges a schema version. (The tests make their fixtures with sqlite3; they are not the
        report.)"""
        modules = [HERE / "render.py", *sorted((HERE / "tunebench_report").glob("*.py"))]
        self.assertGreater(len(modules), 5)
        for path in modules:
            source = path.read_text(encoding="utf-8")
            self.assertNotRegex(source, r"\bsqlite3\b", path)
            self.assertNotRegex(source, r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|PRAGMA|CREATE TABLE|FROM \w+ WHERE)\b",
                                path)
            self.assertNotRegex(source, r"(?i)schema.version|user_version", path)


class ErrorTest(RenderCase):
    def test_missing_database(self):
        self.assertError(["--db", str(OUT / "nope.sqlite"), "--out", str(OUT / "x")], "no such database")

    def test_not_sqlite(self):
        bad = OUT / "not-a-database.sqlite"
        bad.write_text("hello, this is not SQLite\n" * 100)
        self.assertError(["--db", str(bad), "--out", str(OUT / "x")], "cannot read it as an SQLite database")

    def test_foreign_sqlite(self):
        other = OUT / "other.sqlite"
        other.unlink(missing_ok=True)
        with contextlib.closing(sqlite3.connect(other)) as con:
            con.execute("CREATE TABLE runs (x)")
        self.assertError(["--db", str(other), "--out", str(OUT / "x")], "not tunebench's")

    def test_bad_run(self):
        db = str(DATABASES / "one-run.sqlite")
        self.assertError(["--db", db, "--out", str(OUT / "x"), "--run", "ffffffff"], "no run has this id")
        self.assertError(["--db", db, "--out", str(OUT / "x"), "--run", "ab"], "4+ of its first characters")

    def test_unknown_host(self):
        self.assertError(["--db", str(DATABASES / "one-run.sqlite"), "--out", str(OUT / "x"), "--hosts", "nohost"],
                         "hosts in the database: nightly-epyc")

    def test_bad_hosts_json(self):
        db = str(DATABASES / "one-run.sqlite")
        for name, text, fragment in (("invalid.json", "{oops", "not valid JSON"),
                                     ("list.json", "[1, 2]", "not a comparison of `tunebench compare")):
            path = OUT / name
            path.write_text(text)
            self.assertError(["--db", db, "--out", str(OUT / "x"), "--hosts-json", str(path)], fragment)
        self.assertError(["--db", db, "--out", str(OUT / "x"), "--hosts-json", str(OUT / "missing.json")],
                         "cannot read it")

    def test_command_line_never_shows_a_traceback(self):
        for args in (["--db", str(OUT / "nope.sqlite"), "--out", str(OUT / "cli")],
                     ["--db", str(DATABASES / "schema-only.sqlite"), "--out", str(OUT / "cli")]):
            done = subprocess.run([sys.executable, str(HERE / "render.py"), *args], capture_output=True, text=True)
            self.assertNotIn("Traceback", done.stderr)
            self.assertIn(done.returncode, (0, 2))


# ----------------------------------------------------------------------------------------------
# Recommendations of `tunebench tune`
# ----------------------------------------------------------------------------------------------


def effect(ratio: float, lo: float, hi: float, verdict: str, text: str) -> dict:
    """An effect as tune stores it (tune.cpp, effect_json)."""
    return {"ratio": ratio, "lo": lo, "hi": hi, "verdict": verdict, "text": text}


def stage(name: str, run: str, certification: str | None) -> dict:
    return {"stage": name, "run": run, **({"certification": certification} if certification is not None else {})}


CERTIFIED = ("certified: aa.no_grad.torchscript-file-infer 1.004x [0.991, 1.017] ±1.3%; "
             "slow3.no_grad.torchscript-file-infer 1.031x [1.017, 1.045] ±1.4%")
NOT_CERTIFIED = "not certified: aa.no_grad.torchscript-file-infer 1.041x [1.022, 1.060] ±1.8% shows an effect: the host was noisy"
HOSTILE_KNOB = '<img src=x onerror="alert(1)">|x'


def recommendation(model: str, ladder: list, settings: dict, final: dict, product: dict | None, agree: bool | None,
                   runs: list, **more) -> dict:
    """A recommendation shaped as `tunebench tune` builds it (tune.cpp, Tuner::recommend)."""
    r = {"model": model, "mode": "infer", "batch": 8, "settings": settings, "resolved": settings,
         "best_single": {ladder[0]["knob"]: ladder[0]["value"]} if ladder else {},
         "screen": [], "controls": [], "left_out": [], "ladder": ladder,
         "vs_default": final, "vs_best_single": {},
         "apply": {"launch": "", "python": ["with torch.no_grad():  # around the forward"],
                   "cpp": ["torch::NoGradGuard no_grad;"]},
         "runs": runs, "budget_s": 900.0, "seconds": 756.2,
         "certified": not any(x.get("certification", "").startswith("not certified") for x in runs)}
    if agree is not None:
        r["ladder_against_final"] = {"product": product, "final": final["time"], "agree": agree}
    r.update(more)
    return r


# The Python example of docs/tune.md, with its third step left out undecided: kept, dropped, kept,
# left out, kept; the final measurement agrees with the product; every stage certified.
AGREES = recommendation(
    "models/examples/convnet.py",
    [{**effect(0.47, 0.39, 0.57, "helps", "0.47x [0.39, 0.57] helps"), "knob": "channels_last", "value": True,
      "kept": True, "against": "the defaults", "why": "the best knob alone (screen)",
      "cumulative": effect(0.47, 0.39, 0.57, "helps", "0.47x [0.39, 0.57] helps")},
     {"knob": "compile", "value": True, "against": "channels_last=true",
      **effect(0.84, 0.62, 1.14, "not precise enough (±35.4%)", "0.84x [0.62, 1.14] not precise enough (±35.4%)"),
      "kept": False, "why": "helped alone (0.53x [0.44, 0.65] helps), not on top of channels_last=true: "
                            "no effect beyond ±2 % there"},
     {"knob": "allocator", "value": "jemalloc", "against": "channels_last=true",
      **effect(0.83, 0.79, 0.88, "helps", "0.83x [0.79, 0.88] helps"), "kept": True,
      "why": "helps on top of the configuration so far",
      "cumulative": effect(0.39, 0.32, 0.48, "helps", "0.39x [0.32, 0.48] helps")},
     {"knob": "malloc_tunables", "value": True, "against": "allocator=jemalloc, channels_last=true",
      **effect(1.03, 0.98, 1.08, "not precise enough (±5.0%)", "1.03x [0.98, 1.08] not precise enough (±5.0%)"),
      "kept": False, "undecided": True, "sampled_on": 2,
      "why": "undecided on top of allocator=jemalloc, channels_last=true when the ladder's budget was spent, after "
             "sampling on 2 time(s): left out, since it is not shown to help there (it helped alone: 0.74x [0.73, "
             "0.76] helps); a larger --budget may decide it"},
     {"knob": "numa_bind", "value": True, "against": "allocator=jemalloc, channels_last=true", "kept": False,
      "why": "cannot be combined: numa_bind and allocator both set LD_PRELOAD"},
     {"knob": "no_grad", "value": True, "against": "allocator=jemalloc, channels_last=true",
      **effect(0.96, 0.94, 0.98, "helps", "0.96x [0.94, 0.98] helps"), "kept": True,
      "why": "helps on top of the configuration so far",
      "cumulative": effect(0.38, 0.31, 0.46, "helps", "0.38x [0.31, 0.46] helps")}],
    {"allocator": "jemalloc", "channels_last": True, "no_grad": True},
    {"peak memory": effect(0.97, 0.96, 0.98, "helps", "0.97x [0.96, 0.98] helps"),
     "time": effect(0.38, 0.36, 0.40, "helps", "0.38x [0.36, 0.40] helps")},
    effect(0.38, 0.31, 0.46, "helps", "0.38x [0.31, 0.46] helps"), True,
    [stage("screen", "0a0a0a0a-0000-4000-8000-000000000001", CERTIFIED),
     stage("step 2", "0a0a0a0a-0000-4000-8000-000000000002", None),
     stage("final", "0a0a0a0a-0000-4000-8000-000000000003", CERTIFIED)],
    left_out=[{"knob": "multi_instance", "text": "0.73x [0.61, 0.83] helps",
               "why": "several processes' summed throughput, a way to deploy the model rather than a setting of "
                      "one process"}],
    vs_best_single={"time": effect(0.83, 0.78, 0.88, "helps", "0.83x [0.78, 0.88] helps")})

# Two kept steps whose product the final measurement does not reach, on a screen whose A/A moved.
DISAGREES = recommendation(
    "resnet50 (preset tiny)",
    [{**effect(0.67, 0.63, 0.72, "helps", "0.67x [0.63, 0.72] helps"), "knob": "no_grad", "value": True,
      "kept": True, "against": "the defaults", "why": "the best knob alone (screen)",
      "cumulative": effect(0.67, 0.63, 0.72, "helps", "0.67x [0.63, 0.72] helps")},
     {"knob": "malloc_tunables", "value": True, "against": "no_grad=true",
      **effect(0.80, 0.77, 0.83, "helps", "0.80x [0.77, 0.83] helps"), "kept": True,
      "why": "helps on top of the configuration so far",
      "cumulative": effect(0.536, 0.50, 0.57, "helps", "0.536x [0.500, 0.570] helps")}],
    {"malloc_tunables": True, "no_grad": True},
    {"time": effect(0.66, 0.65, 0.68, "helps", "0.66x [0.65, 0.68] helps")},
    effect(0.536, 0.50, 0.57, "helps", "0.536x [0.500, 0.570] helps"), False,
    [stage("screen", "0b0b0b0b-0000-4000-8000-000000000001", NOT_CERTIFIED),
     stage("step 2", "0b0b0b0b-0000-4000-8000-000000000002", None),
     stage("final", "0b0b0b0b-0000-4000-8000-000000000003", CERTIFIED)])

# Names tunebench stores as it was given them: a model path and a knob that are markup.
HOSTILE = recommendation(
    f"/models/{XSS}.pt",
    [{**effect(0.9, 0.88, 0.92, "helps", "0.90x [0.88, 0.92] helps"), "knob": HOSTILE_KNOB, "value": f"{XSS}",
      "kept": True, "against": "the defaults", "why": f"the best knob alone (screen) {XSS}",
      "cumulative": effect(0.9, 0.88, 0.92, "helps", "0.90x [0.88, 0.92] helps")}],
    {HOSTILE_KNOB: XSS},
    {"time": effect(0.91, 0.89, 0.93, "helps", "0.91x [0.89, 0.93] helps")},
    effect(0.9, 0.88, 0.92, "helps", "0.90x [0.88, 0.92] helps"), True,
    [stage("screen", "0c0c0c0c-0000-4000-8000-000000000001", CERTIFIED),
     stage("final", "0c0c0c0c-0000-4000-8000-000000000002", CERTIFIED)])

NOTHING_HELPED = recommendation("resnet50 (preset tiny)", [], {}, {}, None, None,
                                [stage("screen", "0d0d0d0d-0000-4000-8000-000000000001", CERTIFIED)])

# (uuid, created_at, recommendation), stored out of order: the newest three are shown, newest first.
TUNINGS = [("dddddddd-0000-4000-8000-000000000004", "2026-12-01T08:00:00Z", NOTHING_HELPED),
           ("aaaaaaaa-0000-4000-8000-000000000001", "2026-12-07T09:00:00Z", AGREES),
           ("cccccccc-0000-4000-8000-000000000003", "2026-12-05T09:00:00Z", HOSTILE),
           ("bbbbbbbb-0000-4000-8000-000000000002", "2026-12-06T09:00:00Z", DISAGREES)]


class PageTables(html.parser.HTMLParser):
    """The page's tables, each a list of rows of cell texts (markup stripped, entities resolved)."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tables, self._cell = [], None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "br" and self._cell is not None:
            self._cell += " "

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(" ".join(self._cell.split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def with_header(self, text: str) -> list:
        return [t for t in self.tables if t and any(text in cell for cell in t[0])]


class TuningTest(RenderCase):
    """The page's and the summary's tuning section: the rows of the tunings table, written as
    `tunebench tune` writes them (results/README.md, tunings) into a database tunebench made, drawn
    as tune prints them (`tunebench show UUID` prints a stored one again)."""

    @classmethod
    def setUpClass(cls):
        cls.db = copy_database("one-run.sqlite", cls.__name__)
        with contextlib.closing(sqlite3.connect(cls.db)) as con:
            # tunebench's schema without its rows: the section alone, drawn in a second or two
            for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                con.execute(f'DELETE FROM "{table}"')
            for uuid, created_at, r in TUNINGS:
                con.execute("INSERT INTO tunings (uuid, created_at, model, recommendation) VALUES (?, ?, ?, ?)",
                            (uuid, created_at, r["model"], json.dumps(r)))
            con.commit()
        cls.out = OUT / cls.__name__
        cls.code, _, cls.stderr = render_cli("--db", str(cls.db), "--out", str(cls.out))
        cls.page = (cls.out / "report.html").read_text(encoding="utf-8")
        cls.summary = (cls.out / "summary.md").read_text(encoding="utf-8")
        cls.section = cls.page[cls.page.index('<h2 id="tune">'):cls.page.index("<footer>")]
        cls.tables = PageTables(cls.section)

    def test_the_newest_few_newest_first(self):
        self.assertEqual(self.code, 0, self.stderr)
        self.assertNotIn("Traceback", self.stderr)
        self.assertNotIn("cut at the figure's edge", self.stderr)
        self.assertIn("6. Tuning: the recommended configuration for your model", self.page)
        newest_first = [TUNINGS[1][0], TUNINGS[3][0], TUNINGS[2][0]]
        order = [self.section.index(f"<code>{uuid}</code>") for uuid in newest_first]
        self.assertEqual(order, sorted(order), "newest first")
        self.assertNotIn(TUNINGS[0][0], self.page)
        self.assertIn("1 older recommendation(s) in this database are not shown", self.section)
        self.assertTrue((self.out / "ladder.png").exists())
        headings = [line for line in self.summary.splitlines() if line.startswith("### Tuning: ")]
        self.assertEqual(headings, ["### Tuning: models/examples/convnet.py (infer, batch 8)",
                                    "### Tuning: resnet50 (preset tiny) (infer, batch 8)",
                                    f"### Tuning: /models/{md(XSS)}.pt (infer, batch 8)"])
        self.assertIn("1 older recommendation(s) not shown", self.summary)

    def test_the_ladder_table(self):
        ladder = self.tables.with_header("kept / dropped / left out")[0]
        self.assertEqual(ladder[0], ["step", "knob", "measured against", "effect [95 % interval]",
                                     "kept / dropped / left out", "cumulative (product of the kept steps)", "why"])
        why = [s["why"] for s in AGREES["ladder"]]
        self.assertEqual(ladder[1:], [
            ["1", "channels_last=true", "the defaults", "0.47x [0.39, 0.57] helps", "kept",
             "0.47x [0.39, 0.57] helps", why[0]],
            ["2", "compile=true", "channels_last=true", "0.84x [0.62, 1.14] not precise enough (±35.4%)", "dropped",
             "", why[1]],
            ["3", "allocator=jemalloc", "channels_last=true", "0.83x [0.79, 0.88] helps", "kept",
             "0.39x [0.32, 0.48] helps", why[2]],
            ["4", "malloc_tunables=true", "allocator=jemalloc, channels_last=true",
             "1.03x [0.98, 1.08] not precise enough (±5.0%)", "left out undecided sampled on 2 time(s)", "", why[3]],
            ["5", "numa_bind=true", "allocator=jemalloc, channels_last=true", "not measured", "dropped", "", why[4]],
            ["6", "no_grad=true", "allocator=jemalloc, channels_last=true", "0.96x [0.94, 0.98] helps", "kept",
             "0.38x [0.31, 0.46] helps", why[5]]])
        # Every effect with its interval, or said not measured: never a bare number.
        for table in self.tables.with_header("kept / dropped / left out"):
            for row in table[1:]:
                for cell in (row[3], row[5]):
                    if cell:
                        self.assertRegex(cell, r"^(\d\.\d+x \[\d\.\d+, \d\.\d+\]|not measured)", row)
        rows = [line for line in self.summary.splitlines() if line.startswith("| ") and "channels\\_last" in line
                and line.split(" | ")[0] in ("| 1", "| 4")]
        self.assertEqual(rows, [
            "| 1 | channels\\_last=true | the defaults | 0.47x \\[0.39, 0.57\\] helps | kept | "
            "0.47x \\[0.39, 0.57\\] helps | the best knob alone (screen) |",
            "| 4 | malloc\\_tunables=true | allocator=jemalloc, channels\\_last=true | 1.03x \\[0.98, 1.08\\] not "
            "precise enough (±5.0%) | left out undecided |  | " + md(why[3]) + " |"])
        left_out = self.tables.with_header("why left out")[0]
        self.assertEqual(left_out[1][:2], ["multi_instance", "0.73x [0.61, 0.83] helps"])

    def test_the_final_measurement_beside_the_product(self):
        finals = self.tables.with_header("do they agree?")
        self.assertEqual([t[1] for t in finals], [
            ["0.38x [0.36, 0.40] helps", "0.38x [0.31, 0.46] helps", "agree"],
            ["0.66x [0.65, 0.68] helps", "0.536x [0.500, 0.570] helps", "DISAGREE"],
            ["0.91x [0.89, 0.93] helps", "0.90x [0.88, 0.92] helps", "agree"]])
        # The line tune prints under the recommendation (tune.cpp, print_recommendation), word for word.
        agrees = ("the ladder's product 0.38x [0.31, 0.46] helps agrees with the final measurement "
                  "0.38x [0.36, 0.40] helps")
        disagrees = ("the ladder's product 0.536x [0.500, 0.570] helps DISAGREES with the final measurement "
                     "0.66x [0.65, 0.68] helps: the kept steps (malloc_tunables=true, no_grad=true) do not chain as "
                     "their product says; together they interact (one step's gain taken by another's), or the host "
                     "moved between the stages: act on the final figure")
        self.assertIn(f'<p class="meta">{esc(agrees)}</p>', self.section)
        self.assertIn(f'<p class="warn">{esc(disagrees)}</p>', self.section)
        self.assertIn(md(disagrees), self.summary)
        self.assertIn("DISAGREES with the final measurement 0.66x [0.65, 0.68] helps: the kept steps", self.section)
        self.assertIn("time against the defaults (final measurement): 0.38x \\[0.36, 0.40\\] helps · the ladder's "
                      "product: 0.38x \\[0.31, 0.46\\] helps · **they agree**", self.summary)
        self.assertIn("**they DISAGREE**", self.summary)
        # the recommended settings, the other metric and the best knob alone, as tune printed them
        self.assertIn("<b>Recommended:</b> <code>allocator=jemalloc, channels_last=true, no_grad=true</code>", self.section)
        self.assertIn("peak memory against the defaults: 0.97x", self.section)
        self.assertIn(f"time against channels_last=true alone: {figure_html('0.83x [0.78, 0.88]')} helps", self.section)
        self.assertIn("**Recommended:** allocator=jemalloc, channels\\_last=true, no\\_grad=true", self.summary)

    def test_not_certified_is_said_plainly(self):
        start = self.section.index(f"<code>{TUNINGS[3][0]}</code>")
        disagrees = self.section[start:self.section.index(f"<code>{TUNINGS[2][0]}</code>")]
        self.assertIn('<div class="warn"><b>NOT CERTIFIED.</b> The recommendation is NOT CERTIFIED: the controls '
                      "of its screen stage did not hold", disagrees)
        self.assertIn("**NOT CERTIFIED.** The recommendation is NOT CERTIFIED: the controls of its screen stage", self.summary)
        self.assertEqual(self.section.count("The recommendation is NOT CERTIFIED"), 1)
        # each stage's line as tunebench prints it (analysis::certification_line), one without controls said so
        stages = self.tables.with_header("its controls")[1]
        self.assertEqual([row[0] for row in stages[1:]], ["screen", "step 2", "final"])
        self.assertEqual(stages[1][2], "NOT CERTIFIED by its controls, nor any verdict of this run: "
                                       + NOT_CERTIFIED.removeprefix("not certified: "))
        self.assertEqual(stages[2][2], "no controls in this stage: nothing certified or not")
        self.assertEqual(stages[3][2], "certified by its controls: " + CERTIFIED.removeprefix("certified: "))
        self.assertIn("**Stages:** screen: NOT CERTIFIED by its controls", self.summary)

    def test_every_name_escaped(self):
        for raw in (XSS, HOSTILE_KNOB):
            self.assertNotIn(raw, self.page)
            self.assertNotIn(raw, self.summary)
        self.assertNotIn("<img src=x", self.page + self.summary)
        self.assertIn(esc(HOSTILE_KNOB), self.section)
        self.assertIn(breakable(f"/models/{XSS}.pt"), self.section)
        self.assertIn(md(f"{HOSTILE_KNOB}={XSS}"), self.summary)
        ladder = self.tables.with_header("kept / dropped / left out")[2]
        self.assertEqual(ladder[1][1:3], [f"{HOSTILE_KNOB}={XSS}", "the defaults"])
        self.assertSelfContained(self.page)

    def test_nothing_without_tunings(self):
        report = build_report(open_database(str(DATABASES / "one-run.sqlite")), "latest", None, None)
        self.assertEqual(report.tunings, [])
        page = html_page.render_html(report, {})
        summary = markdown_summary.render_markdown(report, Path("report.html"))
        for text in ('id="tune"', "Tuning", "tunebench tune", "ecommend"):
            self.assertNotIn(text, page)
            self.assertNotIn(text, summary)


# ----------------------------------------------------------------------------------------------
# Against tunebench itself, and in a browser
# ----------------------------------------------------------------------------------------------


class TunebenchTest(RenderCase):
    """The page draws the rows tunebench stored, as `tunebench show --json` reads them."""

    def test_effects_drawn_are_the_stored_ones(self):
        db = DATABASES / "nightly.sqlite"
        with contextlib.closing(sqlite3.connect(db)) as con:
            latest = con.execute("SELECT uuid FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
            texts = dict(((x, m, c), t) for x, m, c, t in con.execute(
                "SELECT experiment, metric, compared, text FROM effects WHERE run_uuid = ? AND kind = 'effect'",
                (latest,)))
        shown = show_json(db, latest)
        _, page, summary = self.render(db, "--run", latest)
        drawn = 0
        for x in shown["experiments"]:
            for e in x["effects"]:
                if e["compared"].startswith(("main effect of ", "interaction ")):
                    stored = f"{e['compared'].split(' of ')[-1].replace('interaction ', '').replace(' x ', ' × ')}"
                    self.assertIn(esc(stored), page)  # the factorial table
                    continue
                text = texts[(x["name"], e["metric"], e["compared"])]
                self.assertEqual(text, e["text"])  # the stored text is the one show prints
                numbers, words = text.split("] ", 1)
                numbers += "]"
                if x["knob"] == "aa":  # a control in its own words, not the estimator's verdict
                    self.assertRegex(words, r"^(holds 1 \(±\d+\.\d%\)|shows an effect: the host was noisy)$")
                elif x["knob"] == "positive_control":
                    self.assertIn(words, ("detected", "missed"))
                else:
                    self.assertTrue(words.startswith(e["verdict"]), text)
                self.assertIn(f'<td class="num">{esc(numbers)}</td>', page)
                self.assertIn(f">{esc(words)}</span></td>", page)
                self.assertIn(md(numbers), summary)
                drawn += 1
        self.assertGreater(drawn, 10)
        self.assertIn("<h3>channels_last+no_grad.resnet50-full-infer", page)
        self.assertIn("main effect: channels_last", page)
        self.assertIn("interaction: channels_last × no_grad", page)

    def test_floors_and_findings_are_those_show_reads(self):
        db = DATABASES / "nightly.sqlite"
        with contextlib.closing(sqlite3.connect(db)) as con:
            uuids = [r[0] for r in con.execute("SELECT uuid FROM runs ORDER BY started_at")]
        tables = open_database(str(db))
        runs = {r.uuid: r for r in load_runs(tables)}
        checks = {uuid: load_check(tables, runs[uuid]) for uuid in (uuids[-1], uuids[9])}
        for uuid, check in checks.items():
            shown = show_json(db, uuid)
            self.assertEqual([(f["experiment"], f["arm"], f["runs"], f["calibrated_at"], f["sigma_log"],
                               f["min_detectable"]) for f in shown["noise_floors"]],
                             [(f.experiment, f.arm, f.runs, f.calibrated_at, f.sigma_log, f.min_detectable)
                              for f in check.floors or []])
            self.assertEqual([(f["experiment"], f["arm"], f["kind"], f["detail"]) for f in shown["findings"]],
                             [(f.experiment, f.arm, f.kind, f.detail) for f in check.findings])
        self.assertTrue(checks[uuids[-1]].floors)
        self.assertTrue(checks[uuids[9]].findings)


# Appended to a copy of the page (the page itself has no script): on load, every element that
# reaches past the window's left or right edge outside a box that scrolls on its own (the outermost
# of them only), every box that clips its content sideways (overflow hidden or clip, an ellipsis),
# and whether the page itself scrolls sideways, written into the page as JSON for --dump-dom.
WIDTH_PROBE = """
addEventListener("load", () => {
  const width = document.documentElement.clientWidth, found = [], flagged = new Set();
  const name = (el) => el.tagName.toLowerCase() + (el.className ? "." + el.className : "") + " '"
      + (el.textContent || el.getAttribute("alt") || "").trim().slice(0, 50) + "'";
  const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  const scrolled = (el) => { for (let p = el.parentElement; p; p = p.parentElement) if (scrolls(p)) return true; return false; };
  if (document.documentElement.scrollWidth > width)
    found.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " px in " + width);
  for (const el of document.body.querySelectorAll("*")) {
    const box = el.getBoundingClientRect(), style = getComputedStyle(el);
    if ((box.width || box.height) && (box.right > width + 0.5 || box.left < -0.5) && !scrolled(el)) {
      flagged.add(el);
      if (!flagged.has(el.parentElement))
        found.push(name(el) + " reaches from " + Math.round(box.left) + " to " + Math.round(box.right) + " px");
    }
    const clips = ["hidden", "clip"].includes(style.overflowX) || style.textOverflow === "ellipsis";
    if (clips && el.scrollWidth > el.clientWidth + 1)
      found.push(name(el) + " clips its content: " + el.scrollWidth + " px in " + el.clientWidth);
  }
  const out = document.createElement("pre");
  out.id = "width-probe";
  out.textContent = JSON.stringify({width: width, height: document.documentElement.scrollHeight, found: found});
  document.body.appendChild(out);
});
"""


def chromium(out: Path, *args: str) -> str:
    """Headless Chromium on a file of `out` (the last argument), its stdout."""
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", *args],
                          capture_output=True, text=True, timeout=120, cwd=out)
    return done.stdout


@unittest.skipUnless(CHROMIUM, "chromium is not installed (Debian: apt-get install chromium)")
class ScreenshotTest(RenderCase):
    def test_screenshot(self):
        out, _, _ = self.render(DATABASES / "two-hosts.sqlite", name="screenshot")
        shot = out / "report.png"
        shot.unlink(missing_ok=True)
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={shot}", "--window-size=1400,2400", (out / "report.html").as_uri()],
                       capture_output=True, timeout=120, cwd=out)
        self.assertTrue(shot.exists(), "chromium wrote no screenshot")
        import matplotlib.image
        pixels = matplotlib.image.imread(str(shot))[:, :, :3]
        self.assertEqual(pixels.shape[:2], (2400, 1400))
        # The first screen shows the verdict colours: green (helps) is there to be seen.
        green = (abs(pixels[:, :, 0] - 0x1A / 255) < 0.05) & (abs(pixels[:, :, 1] - 0x96 / 255) < 0.05) \
            & (abs(pixels[:, :, 2] - 0x41 / 255) < 0.05)
        self.assertGreater(int(green.sum()), 2000)
        print(f"\nscreenshot: {shot}", file=sys.stderr)


    def test_nothing_cut_off_at_1024_to_1920_pixels(self):
        """A smoke run (extreme effects, paired verdicts with their widths; a real one where
        $TUNEBENCH_SMOKE_DB names it), the nightly history (long claims and notes, factorial names,
        30 controls) and two hosts side by side (the widest tables: every figure with its interval,
        prices), in a window 1,024, 1,280, 1,440 and 1,920 pixels wide: no element past the
        window's edge, none clipped, no text cut off inside a figure; for people to look at, the
        whole page at 1,024, 1,280 and 1,920 pixels and the smoke run's first screen at 1,280."""
        two_hosts = hosts_json(DATABASES / "two-hosts.sqlite", OUT / "widths-two-hosts", "nightly-epyc",
                               "nightly-xeon", prices={"nightly-epyc": 4.1, "nightly-xeon": 1.9})
        smoke = os.environ.get("TUNEBENCH_SMOKE_DB")
        reports = [("smoke", lambda: self.render(smoke, name="widths-smoke") if smoke
                    else self.render_tables(smoke_like_tables(), name="widths-smoke")),
                   ("nightly", lambda: self.render(DATABASES / "nightly.sqlite", name="widths-nightly")),
                   ("two-hosts", lambda: self.render(DATABASES / "two-hosts.sqlite", "--hosts-json", str(two_hosts),
                                                     name="widths-two-hosts"))]
        for name, render in reports:
            out, page, _ = render()  # no text cut in a figure (render_from)
            probe = out / "report-width-probe.html"
            probe.write_text(page.replace("</body>", f"<script>{WIDTH_PROBE}</script></body>"), encoding="utf-8")
            for width in (1024, 1280, 1440, 1920):
                with self.subTest(report=name, width=width):
                    dom = chromium(out, f"--window-size={width},2000", "--virtual-time-budget=5000", "--dump-dom",
                                   probe.as_uri())
                    start = dom.find('<pre id="width-probe">')
                    self.assertNotEqual(start, -1, f"the probe wrote nothing; chromium printed:\n{dom[-2000:]}")
                    found = json.loads(html.unescape(dom[start:].split(">", 1)[1].split("</pre>", 1)[0]))
                    self.assertGreater(found["width"], width - 20)  # less a scroll bar, if any
                    self.assertEqual(found["found"], [], f"{name} at {width} pixels: overflows or is cut off")
                    shots = [(f"report-{width}.png", min(found["height"], 16000))] if width != 1440 else []
                    if name == "smoke" and width == 1280:
                        shots.append(("first-screen-1280.png", 1000))
                    for file, height in shots:
                        shot = out / file
                        shot.unlink(missing_ok=True)
                        chromium(out, "--hide-scrollbars", f"--screenshot={shot}", f"--window-size={width},{height}",
                                 (out / "report.html").as_uri())
                        self.assertTrue(shot.exists(), "chromium wrote no screenshot")
                        print(f"\n{name} at {width} pixels: {shot}", file=sys.stderr)

if __name__ == "__main__":
    unittest.main()
