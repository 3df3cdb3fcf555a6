"""``redmem migrate MODULE:Model [--rename OLD=NEW ...]``: bring stored records to the model the code declares."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from ..store._errors import ValidationError
from ._ingest import progress_bar
from ._runtime import import_model, print_notes, start

__all__ = ["add_arguments", "run", "parsed_renames"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="the model, as MODULE:Class (its module must be importable)")
    parser.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                        help="move the stored entries of field OLD to field NEW (repeatable)")
    parser.add_argument("--batch-size", type=int, default=500, help="records per atomic page (default: 500)")


def parsed_renames(pairs: list[str]) -> dict[str, str]:
    """``["content=text"]`` as ``{"content": "text"}``; ValidationError for a pair without one ``=``."""
    renames = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old.strip() or not new.strip() or "=" in new:
            raise ValidationError(f"--rename takes OLD=NEW, got {pair!r}")
        renames[old.strip()] = new.strip()
    return renames


def run(console: Console, args: argparse.Namespace) -> None:
    runtime = start(args)
    print_notes(console, runtime)
    model = import_model(args.model)
    renames = parsed_renames(args.rename)
    with progress_bar(console) as progress:
        task = progress.add_task(f"migrating {model.__name__}", total=None)
        report = model.migrate(renames, args.batch_size,
                               progress=lambda done, total: progress.update(task, completed=done, total=total))
    if report.records == 0 and not renames and not report.indexes:
        console.print(f"{model.__name__}: schema recorded, nothing to rewrite under {escape(runtime.location)}",
                      highlight=False)
        return
    indexes = ", ".join(report.indexes) or "none"
    console.print(f"migrated {report.records} {model.__name__} records under {escape(runtime.location)}: "
                  f"{report.renamed} renamed, {report.kept_both} kept both entries, indexes built: {indexes}",
                  highlight=False)
