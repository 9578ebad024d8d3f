"""Loading: the stored rows as tunebench hands them over (`tunebench export --format tables`).

The report opens no database. `tunebench report` writes the export beside the report and passes
it (--tables FILE); render.py given --db PATH runs `tunebench export --format tables --db PATH`
itself. tunebench reads the file (an older one through a migrated copy, never changed), refuses
what it cannot read, and hands over every column of the tables the report draws, each by its
name: a column added to a table arrives here with no edit, and a table the file lacks is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path


class ReportError(Exception):
    """A problem the user fixes (path, --run, --hosts, --hosts-json): one message, exit 2."""


SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file
EXPORT_HEADER = "tunebench_tables"


class Tables:
    """The export: per table its rows in stored order, each a dict of column name to value
    (integer, real, text or None; JSON columns as text). A table the database lacks is absent."""

    def __init__(self, document: dict, database: str):
        header = document.get(EXPORT_HEADER)
        self.database = str(header.get("database") or database) if isinstance(header, dict) else database
        self._tables = {name: rows for name, rows in document.items()
                        if name != EXPORT_HEADER and isinstance(rows, list)}
        self._grouped: dict = {}

    def has(self, table: str) -> bool:
        return table in self._tables

    def rows(self, table: str) -> list[dict]:
        """The table's rows, oldest first; [] when the database has no such table."""
        return self._tables.get(table, [])

    def grouped(self, table: str, column: str) -> dict:
        """The table's rows by the value of `column`, each group in stored order (computed once)."""
        key = (table, column)
        if key not in self._grouped:
            groups: dict = {}
            for row in self.rows(table):
                groups.setdefault(row.get(column), []).append(row)
            self._grouped[key] = groups
        return self._grouped[key]

    def first_by(self, table: str, *columns: str) -> dict:
        """The first row, in stored order, of each combination of `columns`' values (computed once):
        e.g. an arm's first trial, whose settings stand for the arm."""
        key = (table, *columns, "first")
        if key not in self._grouped:
            firsts: dict = {}
            for row in self.rows(table):
                firsts.setdefault(tuple(row.get(c) for c in columns), row)
            self._grouped[key] = firsts
        return self._grouped[key]


def parse_tables(text: str, source: str, database: str) -> Tables:
    """The export's JSON text; ReportError when it is not one. `source` names it in messages."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ReportError(f"{source}: not valid JSON ({error}); write it with "
                          "`tunebench export --format tables --db FILE`") from None
    if not isinstance(document, dict) or not isinstance(document.get(EXPORT_HEADER), dict):
        raise ReportError(f"{source}: not an export of `tunebench export --format tables`")
    return Tables(document, database)


def read_tables(path: str) -> Tables:
    """An export written to a file (what `tunebench report` passes as --tables)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ReportError(f"--tables {path}: cannot read it ({error.strerror or error})") from None
    return parse_tables(text, f"--tables {path}", path)


def tunebench_binary() -> str:
    """$TUNEBENCH_BINARY, else the debian build's binary beside this checkout, else `tunebench`
    on the PATH."""
    if os.environ.get("TUNEBENCH_BINARY"):
        return os.environ["TUNEBENCH_BINARY"]
    build = Path(__file__).resolve().parent.parent.parent / "build" / "debian"
    for candidate in (build / "tunebench", build / "app" / "tunebench"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("tunebench") or str(build / "tunebench")


def open_database(path: str) -> Tables:
    """The tables of the database at `path`, through `tunebench export --format tables`.
    Raises ReportError when there is no such file, it is not SQLite, or tunebench refuses it."""
    file = Path(path)
    if not file.exists():
        raise ReportError(
            f"{path}: no such database. Make one with "
            f"`tunebench run --suite suites/smoke.json --db {path}`, or pass --db PATH."
        )
    if not file.is_file():
        raise ReportError(f"{path}: not a file; --db takes an SQLite database made by tunebench")
    try:
        with file.open("rb") as f:
            start = f.read(len(SQLITE_MAGIC))
    except OSError as error:
        raise ReportError(f"{path}: cannot read it ({error.strerror or error})") from None
    if start and start != SQLITE_MAGIC:
        raise ReportError(f"{path}: cannot read it as an SQLite database (it does not start with "
                          "SQLite's header); --db takes a database made by tunebench")
    binary = tunebench_binary()
    try:
        done = subprocess.run([binary, "export", "--format", "tables", "--db", path],
                              capture_output=True, text=True)
    except OSError as error:
        raise ReportError(f"{path}: cannot run tunebench at {binary} to read it ({error.strerror or error}): "
                          "build it (ci/setup.sh) or set TUNEBENCH_BINARY") from None
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        detail = said[-1].removeprefix("tunebench: error: ") if said else f"exit status {done.returncode}"
        raise ReportError(f"{path}: not tunebench's, or not one this tunebench reads: {detail}")
    return parse_tables(done.stdout, f"`tunebench export --format tables --db {path}`", path)
