#!/usr/bin/env python3
"""Render tunebench's stored results as a report: HTML page, Markdown summary and PNG figures.

    render.py (--db PATH | --tables FILE) --out DIR [--run RUN|latest] [--hosts H ...] [--hosts-json FILE]

The entry point of the package tunebench_report (beside this file; its __init__ says what each
module does). Exit 0 on success, printing the HTML path on the last line; exit 2 with one message
for a database that is missing or that tunebench refuses, a --run that matches no run, an unknown
--hosts name or a file that cannot be read.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tunebench_report.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
