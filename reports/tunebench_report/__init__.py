"""tunebench's report: draws what tunebench stored, as tunebench hands it over.

Sections: (1) claims vs measured effects of one run (forest plot + table, time and peak memory
side by side); (2) factorial experiments (main effects, interaction); (3) trends over the
nightly history with software changes and the regressions `tunebench check` stored; (4) hosts
side by side (the comparison `tunebench compare --hosts … --format json` computed, which
`tunebench report` hands over as --hosts-json) and thread-sweep curves; (5) the run's regression
check (findings of `tunebench check`, noise floors of `tunebench calibrate`); (6) tuning: the
newest few recommendations of `tunebench tune` (none, no section).

The report opens no database and has no SQL: it reads the stored rows from `tunebench export
--format tables` (every column by name), so a column tunebench adds reaches it with no edit. It
computes no statistic: every number shown is one tunebench computed and stored, so an interval
here is the one `tunebench show` prints.

Modules, in the order data flows:
  load              the export: run tunebench or read the file; ReportError
  stored, hosts     reading: the stored rows and the host comparison as plain dataclasses
  assemble          the Report: every section's data and what each lacks, before anything is drawn
  figures           matplotlib figures, as PNG bytes
  text              text both formats share
  html_page         the self-contained HTML page (with its CSS)
  markdown_summary  the Markdown summary for a CI job
  cli               render.py's command line
"""
