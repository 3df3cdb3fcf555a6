"""``redmem server status|stop``: the local server that keeps the data when no Redis URL is given.

The data commands start it on first use and leave it running for the next command; ``stop``
shuts it down (its data is written out first and stays in the data directory).
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from ..store._local_server import DATA_DIR_ENV_VAR, LocalServer, default_data_dir

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("status", "stop"), help="show whether it runs, or stop it")


def run(console: Console, args: argparse.Namespace) -> None:
    local = LocalServer(default_data_dir())
    where = escape(f"data directory {local.directory} (${DATA_DIR_ENV_VAR} or $XDG_DATA_HOME/redmem "
                   "or ~/.local/share/redmem)")
    if args.action == "stop":
        pid = local.pid
        stopped = local.stop()
        console.print(f"stopped the local server (pid {pid}); its data stays in {escape(str(local.directory))}"
                      if stopped else f"no local server running; {where}", highlight=False)
        return
    if local.answering():
        state = f"running (pid {local.pid}) at {local.url}"
    elif local.running_pid() is not None:
        state = f"running (pid {local.pid}) but its socket {local.socket_path} is gone: `redmem server stop` stops it"
    else:
        state = "not running"
    console.print(f"local server: {escape(state)}; {where}", highlight=False)
