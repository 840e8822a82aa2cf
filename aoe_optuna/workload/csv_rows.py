"""A CSV workload file read one row at a time: a profile of tens of MB costs the memory of
a row, not of the file (an msprof op_summary of 50 MB held as text and as rows took
about 650 MiB).

A byte that is not UTF-8, a field past the csv module's limit or any other CSV error
becomes one :class:`WorkloadFileError` line naming the file and the line.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from aoe_optuna.workload.files import WorkloadFileError, not_utf8

Row = dict[str, str]


class CsvRows:
    """The rows of the CSV file at ``path`` after its header, as ``(line, row)``: the
    line number in the file and the row by column name (header names stripped; a short
    row lacks the last columns). A row with more fields than the header is refused, not
    cut to the header's width: ``...,21,89`` (a decimal comma) read as 21 was a wrong
    figure taken silently; empty fields past the header (a trailing comma) are no
    data and pass. Iterable again: each pass reads the file anew."""

    def __init__(self, path: Path, source: str) -> None:
        self.path, self.source = path, source
        self.size = max(path.stat().st_size, 1)
        self.read_bytes = 0  # how far the current pass has read, for progress lines
        records = self._records()
        try:
            first = next(records, None)
        finally:
            records.close()
        self.header = [h.strip() for h in first[1]] if first else []

    def __iter__(self) -> Iterator[tuple[int, Row]]:
        records = self._records()
        next(records, None)  # the header
        for line, fields in records:
            if not fields:  # a blank line is no row
                continue
            if len(fields) > len(self.header) and any(f.strip() for f in
                                                      fields[len(self.header):]):
                raise WorkloadFileError(
                    self.source, f"line {line}", f"at most {len(self.header)} fields, as "
                    "the header has (a decimal comma? write 21.89, or quote the field)",
                    f"{len(fields)} fields")
            yield line, dict(zip(self.header, fields, strict=False))

    def _records(self) -> Iterator[tuple[int, list[str]]]:
        """Every record of the file, the header first, with its line number."""
        with self.path.open("r", encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f)
            try:
                for fields in reader:
                    self.read_bytes = f.buffer.tell()
                    yield reader.line_num, fields
            except UnicodeDecodeError as exc:
                raise not_utf8(self.source, exc) from None
            except csv.Error as exc:
                raise WorkloadFileError(self.source, f"line {reader.line_num}", "CSV text",
                                        str(exc)) from None
