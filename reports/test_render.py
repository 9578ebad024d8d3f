#!/usr/bin/env python3
"""Tests of reports/render.py and reports/generate_history.py (standard library unittest).

    .venv/bin/python -m unittest discover -s reports -p 'test_*.py' -v

Databases are generated here (small: a whole run of this file takes well under a minute on two
cores). Outputs go to $TUNEBENCH_TEST_OUT (default: a new temporary directory), one folder per
test; the path is printed at the start.

Environment:
  TUNEBENCH_BINARY    path to a built tunebench: enables the schema test, the tests that the
                      effects, noise floors and findings here equal `tunebench show --json`'s, and
                      the render of a version-1 database tunebench migrated (skipped without it)
  TUNEBENCH_TEST_OUT  where outputs go (the screenshot is OUT/screenshot/report.png)
"""

from __future__ import annotations

import contextlib
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
sys.path.insert(0, str(HERE))

import generate_history  # noqa: E402
import render  # noqa: E402

OUT = Path(os.environ.get("TUNEBENCH_TEST_OUT") or tempfile.mkdtemp(prefix="tunebench-report-tests-")).resolve()
BINARY = os.environ.get("TUNEBENCH_BINARY")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DATABASES = OUT / "databases"
XSS = "<script>alert(1)</script>"


def setUpModule():
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"\ntest outputs: {OUT}", file=sys.stderr)
    if DATABASES.exists():
        shutil.rmtree(DATABASES)
    DATABASES.mkdir()
    # One run; a nightly history (30 runs); two hosts side by side (5 nights each).
    generate_history.generate(DATABASES / "one-run.sqlite", runs=1, trials=48, samples=5, hosts=1, seed=1)
    generate_history.generate(DATABASES / "nightly.sqlite", runs=30, trials=48, samples=5, hosts=1, seed=2)
    generate_history.generate(DATABASES / "two-hosts.sqlite", runs=5, trials=48, samples=5, hosts=2, seed=3)
    # As tunebench wrote it before calibrate and check: kSchemaV1 only, user_version 1.
    generate_history.generate(DATABASES / "schema-v1.sqlite", runs=12, trials=48, samples=5, hosts=1, seed=4,
                              schema_version=1)
    with contextlib.closing(sqlite3.connect(DATABASES / "schema-only.sqlite")) as con:
        con.executescript(generate_history.SCHEMA_V1)
        con.executescript(generate_history.SCHEMA_V2)
        con.execute(f"PRAGMA user_version = {generate_history.SCHEMA_VERSION}")


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
        out = OUT / (name or self._testMethodName)
        code, stdout, stderr = render_cli("--db", str(db), "--out", str(out), *extra)
        self.assertEqual(code, 0, stderr)
        self.assertNotIn("Traceback", stderr)
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


class StatisticsTest(unittest.TestCase):
    def test_mt19937_64_matches_the_standard(self):
        # The C++ standard requires the 10000th output of a default-constructed mt19937_64.
        self.assertEqual(int(render.Mt19937_64(5489).take(10000)[-1]), 9981545732273789042)

    def test_draws_in_pieces_equal_draws_at_once(self):
        whole = render.Mt19937_64(42).take(1000)
        pieces = render.Mt19937_64(42)
        joined = [int(v) for n in (1, 311, 2, 400, 286) for v in pieces.take(n)]
        self.assertEqual(joined, [int(v) for v in whole])

    def test_median(self):
        self.assertEqual(render.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(render.median([4.0, 1.0, 2.0, 3.0]), 2.5)
        self.assertEqual(render.median([7.0]), 7.0)

    def test_quantile_type_7(self):
        values = [1.0, 2.0, 3.0, 4.0, 5.0]
        self.assertEqual(render.quantile_of_sorted(values, 0.25), 2.0)
        self.assertAlmostEqual(render.quantile_of_sorted(values, 0.1), 1.4)
        self.assertEqual(render.quantile_of_sorted(values, 1.0), 5.0)

    def test_verdicts(self):
        self.assertEqual(render.verdict_of_interval(0.8, 0.95), render.HELPS)
        self.assertEqual(render.verdict_of_interval(1.01, 1.2), render.HURTS)
        self.assertEqual(render.verdict_of_interval(0.9, 1.1), render.NO_EFFECT)

    def test_effect_needs_two_samples_per_arm(self):
        effect = render.hierarchical_effect([[1.0]], [[0.5, 0.6]])
        self.assertEqual(effect.verdict, render.INSUFFICIENT)
        self.assertEqual(effect.ratio, 0.55)
        self.assertTrue(math.isnan(effect.lo) and math.isnan(effect.hi))
        self.assertIn("the off arm has 1 sample", effect.note)

    def test_effect_without_spread_collapses(self):
        effect = render.hierarchical_effect([[2.0, 2.0], [2.0]], [[1.0, 1.0], [1.0]])
        self.assertEqual((effect.ratio, effect.lo, effect.hi), (0.5, 0.5, 0.5))
        self.assertEqual(effect.verdict, render.HELPS)

    def test_uniform_and_general_bootstrap_agree(self):
        import numpy as np
        off = [np.array([1.0, 1.1, 0.9]), np.array([1.2, 1.0, 1.05])]
        on = [np.array([0.8, 0.85, 0.9]), np.array([0.7, 0.95, 0.75])]
        fast = render._bootstrap_uniform(off, on, render.Mt19937_64(7), 300)
        slow = render._bootstrap_general(off, on, render.Mt19937_64(7), 300)
        self.assertTrue(np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1]))

    def test_format_effect(self):
        self.assertEqual(render.format_effect(0.62, 0.58, 0.66, "helps"), "0.62x [0.58, 0.66] helps")
        self.assertEqual(render.format_effect(0.995, 0.9946, 0.9955, "helps"), "0.9950x [0.9946, 0.9955] helps")
        self.assertEqual(render.format_effect(1.05, math.nan, math.nan, render.INSUFFICIENT),
                         "1.05x [no interval] insufficient data")

    def test_parse_cell(self):
        self.assertEqual(render.parse_cell("a=on,b=off"), {"a": True, "b": False})
        self.assertIsNone(render.parse_cell("on"))
        self.assertIsNone(render.parse_cell("a=maybe"))

    def test_factorial_contrasts(self):
        import numpy as np
        # cells (a, b): base 1, a 0.5, b 0.8, ab 0.4 -> main a: 0.5, main b: 0.8, no interaction
        levels = np.array([[0, 0], [1, 0], [0, 1], [1, 1]])
        logs = np.log([1.0, 0.5, 0.8, 0.4])
        mains, interactions = render._contrasts(logs, levels, ["a", "b"])
        self.assertAlmostEqual(math.exp(mains[0]), 0.5)
        self.assertAlmostEqual(math.exp(mains[1]), 0.8)
        self.assertAlmostEqual(math.exp(interactions[0][1]), 1.0)
        # ab 0.6 instead: interaction = ab * base / (a * b) = 0.6 / 0.4 = 1.5
        _, interactions = render._contrasts(np.log([1.0, 0.5, 0.8, 0.6]), levels, ["a", "b"])
        self.assertAlmostEqual(math.exp(interactions[0][1]), 1.5)

    def test_default_settings(self):
        self.assertTrue(render.is_default_settings({"allocator": "glibc", "omp_threads": 8, "no_grad": False}, 8))
        self.assertFalse(render.is_default_settings({"allocator": "glibc", "omp_threads": 1}, 8))
        self.assertFalse(render.is_default_settings({"allocator": "jemalloc", "omp_threads": 8}, 8))
        self.assertFalse(render.is_default_settings({"omp_threads": 8, "no_grad": True}, 8))


# ----------------------------------------------------------------------------------------------
# Rendering generated databases
# ----------------------------------------------------------------------------------------------


class RenderTest(RenderCase):
    def test_one_run(self):
        out, page, summary = self.render(DATABASES / "one-run.sqlite")
        for png in ("forest.png", "factorial-1.png", "hosts.png", "threads.png"):
            self.assertTrue((out / png).stat().st_size > 10_000, png)
        self.assertFalse((out / "trends.png").exists())
        self.assertSelfContained(page)
        self.assertIn("data:image/png;base64,", page)
        self.assertIn("1. Claims vs measured", page)
        self.assertIn("Trends need at least 2 runs", page)
        self.assertIn("Only one host", page)
        self.assertIn("Energy per sample is not recorded yet", page)
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

    def test_nightly_history(self):
        out, page, summary = self.render(DATABASES / "nightly.sqlite")
        self.assertTrue((out / "trends.png").stat().st_size > 50_000)
        self.assertIn("LibTorch 1.13.0 → 2.1.0", page)
        self.assertIn("git revision change", page)
        self.assertNotIn("Regressions are not marked", page)
        self.assertNotIn("Trends need at least 2 runs", page)
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
        self.assertEqual(len(floors), 22, "the generator calibrates every arm of the nightly suite")
        self.assertEqual(findings, 0, "the latest night is after every step")
        _, page, summary = self.render(db)
        self.assertIn("<h3>Noise floors</h3>", page)
        for experiment, arm, runs, sigma, false_alarm, power, baseline, detectable, at in floors:
            spread, smallest = f"{100 * math.expm1(sigma):.1f} %", f"{100 * detectable:.1f} %"
            self.assertIn(f'<tr><td>{experiment}</td><td>{arm}</td><td class="num">{spread}</td>'
                          f'<td class="num">{smallest}</td></tr>', page)
            self.assertIn(f"| {render.md(experiment)} | {render.md(arm)} | {spread} | {smallest} |", summary)
            self.assertGreater(detectable, math.expm1(sigma))
        runs, _, false_alarm, power, baseline, _, at = floors[0][2:]
        self.assertEqual((runs, false_alarm, power, baseline), (5, 0.01, 0.8, 5))
        for text in (page, summary):
            self.assertIn(f"Noise floors from 5 A/A runs (calibrated {at})", text)
            self.assertIn("with probability 80.0 % at a 1.0 % false-alarm rate per run", text)
            self.assertIn("against 5 baseline runs", text)
            self.assertIn("No findings stored for this run", text)
        # no_grad.resnet50 off, by hand: t quantiles (4 degrees of freedom) at 1 - 0.01/22 and 0.8, baseline 5
        row = next(f for f in floors if f[:2] == ("no_grad.resnet50-full-infer", "off"))
        self.assertAlmostEqual(row[7], math.expm1((8.827 + 0.941) * row[3] * math.sqrt(1.2)), delta=0.001)

    def test_findings_of_check(self):
        db = copy_database("nightly.sqlite", self._testMethodName)
        with contextlib.closing(sqlite3.connect(db)) as con:
            kinds = dict(con.execute("SELECT kind, COUNT(*) FROM regressions GROUP BY kind").fetchall())
            # GPT (3 experiments x 2 arms) and DLRM (2 x 2): a regression the night of the step and a
            # step change on the 3 nights after
            self.assertEqual(kinds, {"regression": 10, "step change": 30})
            gpt_night = con.execute("SELECT uuid FROM runs ORDER BY started_at LIMIT 1 OFFSET 9").fetchone()[0]
            rows = con.execute("SELECT experiment, arm, kind, ratio, lo, hi, detail FROM regressions "
                               "WHERE run_uuid = ? ORDER BY id", (gpt_night,)).fetchall()
            # a finding that is not a slowdown of the run: listed, never marked
            con.execute("INSERT INTO regressions (run_uuid, experiment, arm, kind, detail, baseline, threshold, "
                        "checked_at) VALUES (?, 'no_grad.resnet50-full-infer', '', 'stopped helping', "
                        "'no_grad.resnet50-full-infer (time on vs off): 0.86x [0.84, 0.88] helps → 1.00x "
                        "[0.98, 1.02] no measurable effect', '[]', 0.05, '2025-01-10T03:00:00Z')", (gpt_night,))
            con.commit()
        self.assertEqual({r[0].split(".")[-1].split("-")[0] for r in rows}, {"gpt"})
        self.assertEqual({r[2] for r in rows}, {"regression"})
        _, page, summary = self.render(db, "--run", gpt_night)
        self.assertIn("<h3>Found by tunebench check</h3>", page)
        for experiment, arm, kind, ratio, lo, hi, detail in rows:
            self.assertGreater(ratio, 1.05)
            self.assertEqual(detail, f"slower than the baseline: {ratio:.2f}x [{lo:.2f}, {hi:.2f}] hurts")
            self.assertIn(f'<span class="chip hurts">regression</span></td><td>{experiment}</td><td>{arm}</td>'
                          f"<td>{detail}</td>", page)
            self.assertIn(f"- **regression** {render.md(experiment)} ({arm}): {render.md(detail)}", summary)
        self.assertIn('<span class="chip none">stopped helping</span></td><td>no_grad.resnet50-full-infer</td>', page)
        self.assertIn("- **stopped helping** no\\_grad.resnet50-full-infer: no\\_grad", summary)
        self.assertIn("Found by tunebench check</a>:</b>", page)  # at a glance, at the top
        self.assertIn("not calibrated on this host and software", page)  # older software than the floors
        self.assertIn("40 regression(s) and step change(s) found by `tunebench check` are marked ▼.", page)
        # marks: regressions and step changes, per run, experiment and arm; not 'stopped helping'
        con, _, _ = render.open_database(str(db))
        with contextlib.closing(con):
            marks, _ = render.regression_marks(con)
        self.assertEqual(len(marks), 40)
        self.assertIn((gpt_night, rows[0][0], rows[0][1]), marks)
        self.assertNotIn((gpt_night, "no_grad.resnet50-full-infer", ""), marks)
        self.assertFalse(any(m[1] == "no_grad.resnet50-full-infer" for m in marks))
        # the night of a step change, a few runs later
        with contextlib.closing(sqlite3.connect(db)) as con:
            later = con.execute("SELECT uuid FROM runs ORDER BY started_at LIMIT 1 OFFSET 11").fetchone()[0]
            step = con.execute("SELECT detail FROM regressions WHERE run_uuid = ? AND kind = 'step change'",
                               (later,)).fetchall()
        _, page, _ = self.render(db, "--run", later, name="findings_step_change")
        self.assertEqual(len(step), 6)
        for (detail,) in step:
            self.assertRegex(detail, rf"^step of 1\.1\d\dx \[1\.\d+, 1\.\d+\] \(p = 0\.001\) from run {gpt_night} ")
            self.assertIn(f"<td>{detail}</td>", page)

    def test_schema_version_1(self):
        db = DATABASES / "schema-v1.sqlite"
        with contextlib.closing(sqlite3.connect(db)) as con:
            tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], 1)
        self.assertNotIn("noise_floors", tables)
        self.assertNotIn("regressions", tables)
        out, page, summary = self.render(db)
        self.assertTrue((out / "trends.png").exists())
        for text in (page, summary):
            self.assertIn("schema version 1", text)
            self.assertIn("Noise floors are not shown: there is no", text)
            self.assertIn("Findings of", text)
            self.assertIn("are not shown: there is no", text)
            self.assertIn("to migrate it to version 2", text)
        self.assertIn("Regressions are not marked: there is no `regressions` table", page)
        self.assertIn("run `tunebench check` after each run to mark regressions", page)
        self.assertNotIn("not built yet", page + summary)
        self.assertNotIn("<h3>Noise floors</h3>\n<table", page)

    def test_two_hosts(self):
        prices = OUT / "prices.json"
        prices.write_text(json.dumps({"nightly-epyc": 9000, "nightly-xeon": 4200}))
        out, page, _ = self.render(DATABASES / "two-hosts.sqlite", "--prices", str(prices))
        self.assertTrue((out / "hosts.png").exists())
        self.assertIn("items/s per price unit", page)
        self.assertIn("nightly-epyc", page)
        self.assertIn("nightly-xeon", page)
        self.assertNotIn("Only one host", page)
        self.assertNotIn("No prices", page)
        # one host only
        _, page, _ = self.render(DATABASES / "two-hosts.sqlite", "--hosts", "nightly-epyc", name="two_hosts_one")
        self.assertIn("Only one host (nightly-epyc)", page)
        self.assertIn("Host <b>nightly-epyc</b>", page)

    def test_schema_without_runs(self):
        out, page, summary = self.render(DATABASES / "schema-only.sqlite")
        self.assertIn("no runs yet", page)
        self.assertIn("no runs yet", summary)
        self.assertEqual(list(out.glob("*.png")), [])
        self.assertNotIn("<img", page)

    def test_empty_file(self):
        empty = OUT / self._testMethodName / "empty.sqlite"
        empty.parent.mkdir(parents=True, exist_ok=True)
        empty.write_bytes(b"")
        _, page, _ = self.render(empty, name="empty_file_out")
        self.assertIn("no tunebench tables", page)

    def test_names_are_escaped(self):
        db = copy_database("one-run.sqlite", self._testMethodName)
        with contextlib.closing(sqlite3.connect(db)) as con:
            con.execute("UPDATE trials SET experiment = ? WHERE experiment = 'no_grad.resnet50-full-infer'", (XSS,))
            con.execute("UPDATE trials SET arm = ? WHERE knob = 'factorial' AND arm = 'channels_last=on,no_grad=on'",
                        ("channels_last=on,no_grad=on<img src=x onerror=alert(2)>",))
            con.execute("UPDATE hosts SET hostname = ?", ('<b onmouseover="x">host$x$</b>',))
            con.commit()
        _, page, summary = self.render(db)
        self.assertNotIn(XSS, page)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", page)
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

    def test_bad_prices(self):
        db = str(DATABASES / "one-run.sqlite")
        for name, text, fragment in (("invalid.json", "{oops", "not valid JSON"),
                                     ("list.json", "[1, 2]", "expected a JSON object"),
                                     ("negative.json", '{"a": -3}', "prices are positive numbers"),
                                     ("text.json", '{"a": "cheap"}', "prices are positive numbers")):
            path = OUT / name
            path.write_text(text)
            self.assertError(["--db", db, "--out", str(OUT / "x"), "--prices", str(path)], fragment)
        self.assertError(["--db", db, "--out", str(OUT / "x"), "--prices", str(OUT / "missing.json")], "cannot read it")

    def test_command_line_never_shows_a_traceback(self):
        for args in (["--db", str(OUT / "nope.sqlite"), "--out", str(OUT / "cli")],
                     ["--db", str(DATABASES / "schema-only.sqlite"), "--out", str(OUT / "cli")]):
            done = subprocess.run([sys.executable, str(HERE / "render.py"), *args], capture_output=True, text=True)
            self.assertNotIn("Traceback", done.stderr)
            self.assertIn(done.returncode, (0, 2))


# ----------------------------------------------------------------------------------------------
# Against tunebench itself, and in a browser
# ----------------------------------------------------------------------------------------------


@unittest.skipUnless(BINARY, "set TUNEBENCH_BINARY to a built tunebench (e.g. build/debian/tunebench) to compare with it")
class TunebenchTest(RenderCase):
    def test_generator_schema_equals_tunebench_schema(self):
        made = OUT / "tunebench-made.sqlite"
        for leftover in OUT.glob("tunebench-made.sqlite*"):
            leftover.unlink()
        made.write_bytes(b"")  # tunebench gives an empty file the current schema
        subprocess.run([BINARY, "show", "latest", "--db", str(made)], capture_output=True, text=True)

        def schema(path):
            with contextlib.closing(sqlite3.connect(path)) as con:
                return (sorted(con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall(),
                               key=lambda row: (row[0], row[1])),
                        con.execute("PRAGMA user_version").fetchone()[0])

        tables, version = schema(made)
        self.assertEqual(version, generate_history.SCHEMA_VERSION)
        self.assertGreater(len(tables), 5, "tunebench did not write its schema")
        self.assertEqual(schema(DATABASES / "schema-only.sqlite"), (tables, version))

    def test_effects_equal_tunebench_show(self):
        self.check_effects_equal_show(tensor_peaks=False)

    def test_tensor_peaks_are_the_peak_memory_of_show_and_report(self):
        # Trials that measured the peak tensor memory of a step (exec_steps.h): both take it as a
        # memory knob's peak memory and show peak RSS beside it.
        effects = self.check_effects_equal_show(tensor_peaks=True)
        memory = [e for e in effects if e.metric == "peak memory"]
        self.assertTrue(memory)
        self.assertTrue(all(e.note.startswith("peak CPU tensor memory of one step") for e in memory))
        self.assertEqual(len([e for e in effects if e.metric == "peak RSS"]), len(memory))

    def check_effects_equal_show(self, tensor_peaks: bool) -> list:
        db = copy_database("nightly.sqlite", self._testMethodName)
        with contextlib.closing(sqlite3.connect(db)) as con:
            latest = con.execute("SELECT uuid FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
            # Uneven sample counts in one process take the bootstrap's general path.
            con.execute("DELETE FROM samples WHERE idx = 0 AND trial_id = "
                        "(SELECT MIN(id) FROM trials WHERE run_uuid = ? AND status = 'ok')", (latest,))
            if tensor_peaks:
                con.execute("UPDATE trials SET evidence = json_set(evidence, '$.tensor_peak_bytes',"
                            " 1000000 + (id % 7) * 1000 + (arm = 'on') * 300000) WHERE run_uuid = ?",
                            (latest,))
            con.commit()
        shown = json.loads(subprocess.run([BINARY, "show", latest, "--db", str(db), "--json"],
                                          capture_output=True, text=True, check=True).stdout)
        con, _, _ = render.open_database(str(db))
        with contextlib.closing(con):
            details = render.load_run_details(con, latest)
            experiments = {x.name: x for x in render.analyze_run(render.load_trials(con, [latest]), details.claims)}
        compared = 0
        for expected in shown["experiments"]:
            mine = experiments[expected["name"]]
            # Pairwise effects only: show's factorial main effects and interactions are checked
            # against known answers in tests/test_stats.cpp (StatsContrast).
            pairwise = [e for e in expected["effects"]
                        if not e["compared"].startswith(("main effect of ", "interaction "))]
            self.assertEqual(len(mine.effects), len(pairwise), expected["name"])
            for effect, reference in zip(mine.effects, pairwise):
                self.assertEqual((effect.metric, effect.compared, effect.verdict),
                                 (reference["metric"], reference["compared"], reference["verdict"]))
                for key in ("ratio", "lo", "hi"):
                    self.assertAlmostEqual(getattr(effect, key), reference[key], delta=1e-9,
                                           msg=f"{expected['name']} {effect.metric} {key}")
                compared += 1
        self.assertGreater(compared, 10)
        return [e for x in experiments.values() for e in x.effects]

    def test_floors_and_findings_equal_tunebench_show(self):
        db = copy_database("nightly.sqlite", self._testMethodName)
        with contextlib.closing(sqlite3.connect(db)) as con:
            latest = con.execute("SELECT uuid FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
            checked = con.execute("SELECT uuid FROM runs ORDER BY started_at LIMIT 1 OFFSET 12").fetchone()[0]
        con, _, _ = render.open_database(str(db))
        with contextlib.closing(con):
            runs = {r.uuid: r for r in render.load_runs(con)}
            checks = {uuid: render.load_check(con, runs[uuid]) for uuid in (latest, checked)}
        for uuid, check in checks.items():
            shown = json.loads(subprocess.run([BINARY, "show", uuid, "--db", str(db), "--json"],
                                              capture_output=True, text=True, check=True).stdout)
            self.assertEqual([(f["experiment"], f["arm"], f["runs"], f["calibrated_at"]) for f in shown["noise_floors"]],
                             [(f.experiment, f.arm, f.runs, f.calibrated_at) for f in check.floors or []])
            for f, mine in zip(shown["noise_floors"], check.floors or []):
                for key in ("sigma_log", "min_detectable", "false_alarm", "power", "baseline_runs"):
                    self.assertAlmostEqual(f[key], getattr(mine, key), delta=1e-12)
            self.assertEqual([(f["experiment"], f["arm"], f["kind"], f["detail"]) for f in shown["findings"]],
                             [(f.experiment, f.arm, f.kind, f.detail) for f in check.findings])
        self.assertTrue(checks[latest].floors and not checks[latest].findings)
        self.assertTrue(checks[checked].findings and not checks[checked].floors)

    def test_version_1_database_migrated_by_tunebench(self):
        db = copy_database("schema-v1.sqlite", self._testMethodName)
        for leftover in db.parent.glob("schema-v1.sqlite.*"):
            leftover.unlink()
        subprocess.run([BINARY, "show", "latest", "--db", str(db)], capture_output=True, text=True, check=True)
        with contextlib.closing(sqlite3.connect(db)) as con:
            self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], generate_history.SCHEMA_VERSION)
        _, page, summary = self.render(db, name=self._testMethodName + "_out")
        for text in (page, summary):
            self.assertNotIn("schema version 1", text)
            self.assertIn("No findings stored for this run", text)
            self.assertIn("is not calibrated on this host and software", text)
        self.assertIn("No regression is marked", page)


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


if __name__ == "__main__":
    unittest.main()
