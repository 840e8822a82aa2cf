"""The knowledge base: the best known config per (SoC, op, dtype, M, K, N, layout), and per
(SoC, op, dtype, problem) for the kernels an operator run tunes beside the GEMMs.

One JSON file collects what every study found. Re-exporting a study merges its
entries and keeps, per key, the entry with the higher objective value; values of
different figures (a step's tokens/s, a shape's TFLOPS: :mod:`.kb_figure`) are
never compared, so one key holds one figure. The
entries' schema and keys are :mod:`aoe_optuna.export.kb_entry`'s; runtime code
asks :mod:`aoe_optuna.export.kb_lookup` (or the C function that
:mod:`aoe_optuna.export.kb_c_header` writes) for the config of a shape.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.export.kb_entry import KBError, Key, describe_key, entry_key, validate_entry
from aoe_optuna.export.kb_figure import REPLACE_OPTION, figure, not_comparable
from aoe_optuna.kb_file import FORMAT, VERSION, KBFileError, read_entries
from aoe_optuna.space.params import LAYOUTS


@dataclass(frozen=True)
class MergeResult:
    """What :meth:`KnowledgeBase.merge` did with one entry."""

    outcome: Literal["added", "replaced", "kept"]
    entry: dict[str, Any]  # the entry the knowledge base holds now
    other: dict[str, Any] | None  # the entry that lost (None when added)
    forced: bool = False  # replaced an entry of another figure, as asked

    @property
    def new_won(self) -> bool:
        return self.outcome != "kept"

    def describe(self) -> str:
        key = describe_key(entry_key(self.entry))
        unit = self.entry["objective"]
        library = self.entry.get("library_kept_us")
        shipped = "" if library is None else f"; library default kept ({library:.6g} us)"
        if self.outcome == "added":
            return f"added {key}: {self.entry['value']:.6g} {unit}{shipped}"
        assert self.other is not None
        won, lost = self.entry, self.other
        verb = "replaced" if self.outcome == "replaced" else "kept"
        forced = f" (another figure: {REPLACE_OPTION})" if self.forced else ""
        return (f"{verb} {key}: {won['value']:.6g} {unit} (study {won['study']}) over "
                f"{lost['value']:.6g} {lost['objective']} (study {lost['study']}){forced}"
                f"{shipped}")


class KnowledgeBase:
    """Entries by key, read from and written to one JSON file."""

    def __init__(self, entries: Mapping[Key, dict[str, Any]] | None = None) -> None:
        self._entries: dict[Key, dict[str, Any]] = dict(entries or {})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> KnowledgeBase:
        """The knowledge base in ``path``; an empty one when the file does not exist."""
        path = Path(path)
        try:
            raw_entries = read_entries(path)
        except KBFileError as exc:
            raise KBError(str(exc)) from None
        kb = cls()
        for i, raw_entry in enumerate(raw_entries):
            if not isinstance(raw_entry, dict):
                raise KBError(f"{path}: entries[{i}]: expected an object")
            entry = validate_entry(raw_entry, where=f"{path}: entries[{i}]")
            key = entry_key(entry)
            if key in kb._entries:
                raise KBError(f"{path}: entries[{i}]: {describe_key(key)} appears twice")
            kb._entries[key] = entry
        return kb

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the file atomically (temporary file + rename), entries sorted by key."""
        data = {"format": FORMAT, "version": VERSION, "entries": self.entries()}
        write_atomic(path, json.dumps(data, indent=2) + "\n")

    def merge(self, entry: Mapping[str, Any], *, replace: bool = False) -> MergeResult:
        """Add ``entry`` or, for a key already held, keep the one with the higher value.

        A tie keeps the entry already held (re-exporting a study changes nothing).
        Values of different figures (:func:`~aoe_optuna.export.kb_figure.not_comparable`:
        another unit, or another workload's step) are never compared: such an entry is
        refused with a :class:`KBError` naming both, unless ``replace`` is set, which puts
        the new entry in the held one's place whatever the values.
        """
        new = validate_entry(entry)
        key = entry_key(new)
        old = self._entries.get(key)
        if old is None:
            self._entries[key] = new
            return MergeResult("added", new, None)
        if not_comparable(old, new) is not None:
            if not replace:
                self.check_comparable(new)
            self._entries[key] = new
            return MergeResult("replaced", new, old, forced=True)
        if new["value"] > old["value"]:
            self._entries[key] = new
            return MergeResult("replaced", new, old)
        return MergeResult("kept", old, new)

    def put_rechecked(self, held: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        """Put ``new`` in the place of ``held`` (the entry a recheck re-timed), whatever the
        values: it is the same kernel's figure, measured again here. False, and nothing
        changed, when the file no longer holds ``held`` for the key (a writer replaced it
        while the recheck measured)."""
        entry = validate_entry(new)
        key = entry_key(entry)
        if self._entries.get(key) != validate_entry(held):
            return False
        self._entries[key] = entry
        return True

    def check_comparable(self, new: Mapping[str, Any]) -> None:
        """Refuse ``new`` as :meth:`merge` would when the entry held for its key is of
        another figure. Only ``new``'s key fields, ``objective``, ``workload`` and
        ``study`` are read, so a run checks the entries it will write before it measures."""
        key = entry_key(new)
        old = self._entries.get(key)
        why = None if old is None else not_comparable(old, new)
        if old is None or why is None:
            return
        raise KBError(
            f"{describe_key(key)}: the held entry's value is {figure(old)} (study "
            f"{old['study']}), the new one's {figure(new)} (study {new.get('study', '?')}): "
            f"{why}, not comparable; write it to another knowledge base file (--kb), or give "
            f"{REPLACE_OPTION} to replace the held entry")

    def entries(self) -> list[dict[str, Any]]:
        return [self._entries[k] for k in sorted(self._entries, key=_sort_key)]

    def get(self, key: Key) -> dict[str, Any] | None:
        return self._entries.get(key)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.entries())


def _sort_key(key: Key) -> tuple[Any, ...]:
    """GEMM entries first, in their order since version 1; then the others by problem."""
    if len(key) == 4:
        return (1, *key)
    soc, op, dtype, m, k, n, layout = key
    return (0, soc, op, dtype, m, k, n, LAYOUTS.index(layout))
