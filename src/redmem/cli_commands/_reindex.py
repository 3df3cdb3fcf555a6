"""``redmem reindex MODULE:Model [--fields a,b]``: fill new or changed indexes for stored records."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from ..fields._reindex import reindex
from ._ingest import progress_bar
from ._runtime import import_model, print_notes, start

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="the model, as MODULE:Class (its module must be importable)")
    parser.add_argument("--fields", help="comma-separated field names (default: every field)")
    parser.add_argument("--batch-size", type=int, default=500, help="records per atomic page (default: 500)")


def run(console: Console, args: argparse.Namespace) -> None:
    runtime = start(args)
    print_notes(console, runtime)
    model = import_model(args.model)
    names = [name.strip() for name in args.fields.split(",") if name.strip()] if args.fields else None
    with progress_bar(console) as progress:
        task = progress.add_task(f"reindexing {model.__name__}", total=None)
        done = reindex(model, names, args.batch_size,
                       progress=lambda finished, total: progress.update(task, completed=finished, total=total))
    fields = ", ".join(names) if names else "every field"
    console.print(f"reindexed {done} {model.__name__} records ({fields}) under {escape(runtime.location)}",
                  highlight=False)
