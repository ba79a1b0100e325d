"""``a2m-a2e stdio``: an A2E memory host speaking JSON lines on stdin/stdout, backed by an
A2M server at ``--url`` or by the bundled server on the database file ``--db``."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence

from a2m import A2MClient

from ._host import HostLimits
from ._plugin import A2EMemoryPlugin
from ._stdio import serve_lines

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="a2m-a2e", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    stdio = commands.add_parser("stdio", help="serve the memory messages as JSON lines")
    backend = stdio.add_mutually_exclusive_group(required=True)
    backend.add_argument("--url", help="an A2M server's URL (JSON-RPC over HTTP)")
    backend.add_argument("--db", help="a SQLite file for the bundled server (a2m-a2e[server])")
    stdio.add_argument("--token", help="bearer token for --url (else A2M_TOKEN)")
    stdio.add_argument(
        "--semantic-writer",
        action="append",
        default=[],
        metavar="AGENT",
        help="an agent allowed to write the shared semantic tier ('*': all); repeatable",
    )
    stdio.add_argument("--max-entries", type=int, help="entries quota per namespace")
    stdio.add_argument("--max-bytes", type=int, help="content bytes quota per namespace")
    stdio.add_argument("--max-entry-bytes", type=int, default=HostLimits.max_entry_bytes)
    return parser


def _client(args: argparse.Namespace) -> A2MClient:
    if args.url is not None:
        return A2MClient(args.url, token=args.token)
    if importlib.util.find_spec("a2m_server") is None:
        sys.exit("a2m-a2e: --db runs the bundled server: pip install 'a2m-a2e[server]'")
    return A2MClient.stdio([sys.executable, "-m", "a2m_server", "stdio", "--db", args.db])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    limits = HostLimits(
        max_entries=args.max_entries,
        max_bytes=args.max_bytes,
        max_entry_bytes=args.max_entry_bytes,
    )
    with _client(args) as client:
        plugin = A2EMemoryPlugin(client, semantic_writers=args.semantic_writer, limits=limits)
        serve_lines(plugin, sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
