"""``a2m-mcp``: serve A2M memory to MCP clients over stdio (the default) or streamable HTTP.

``a2m-mcp --db memory.db`` keeps an embedded store in that SQLite file (the bundled
a2m-server, in this process); ``a2m-mcp --url http://host:8765/`` uses any A2M server,
with the bearer token from ``A2M_TOKEN``. Logs go to stderr: stdout is the MCP channel."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from importlib import metadata
from pathlib import Path

import anyio
import uvicorn

from a2m import AsyncA2MClient

from ._graph import KnowledgeGraph
from ._import import import_graph_file
from ._server import build_server
from ._tools import MemoryConfig

log = logging.getLogger("a2m_mcp")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="a2m-mcp",
        description="Serve A2M shared memory to MCP clients (stdio or streamable HTTP).",
    )
    parser.add_argument("--version", action="version", version=_version())
    store = parser.add_mutually_exclusive_group()
    store.add_argument(
        "--db",
        default=None,
        help="embedded store: SQLite file, :memory:, or postgresql:// URL "
        "(default: $A2M_DB, else ./memory.db)",
    )
    store.add_argument(
        "--url",
        default=None,
        help="an A2M server's URL instead of the embedded store (token from $A2M_TOKEN)",
    )
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: interface (default: loopback)")
    parser.add_argument(
        "--port", type=int, default=8000, help="HTTP: port, 0 for any (default 8000)"
    )
    parser.add_argument("--path", default="/mcp", help="HTTP: endpoint path (default /mcp)")
    parser.add_argument(
        "--namespace",
        default=os.environ.get("A2M_MCP_NAMESPACE", "mcp"),
        help="where writes and deletes land (default: mcp)",
    )
    parser.add_argument(
        "--graph-prefix",
        default=None,
        help="key prefix of the knowledge graph (default: <namespace>/graph)",
    )
    parser.add_argument("--agent", default=os.environ.get("A2M_AGENT"), help="this agent's name")
    parser.add_argument("--org", default=os.environ.get("A2M_ORG"), help="observation tenant: org")
    parser.add_argument(
        "--project", default=os.environ.get("A2M_PROJECT"), help="observation tenant: project"
    )
    parser.add_argument("--session", default=None, help="conversation records belong to")
    parser.add_argument(
        "--import-graph",
        metavar="FILE",
        default=None,
        help="add the graph of a @modelcontextprotocol/server-memory file (memory.jsonl) "
        "to the store's knowledge graph, then exit; importing twice adds nothing",
    )
    parser.add_argument(
        "--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR")
    )
    return parser


def _version() -> str:
    try:
        version = metadata.version("a2m-mcp")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"a2m-mcp {version}"


async def _client(args: argparse.Namespace, stack: AsyncExitStack) -> AsyncA2MClient:
    if args.url is not None:
        client = AsyncA2MClient(args.url)
    else:
        # Imported here: a remote deployment never loads the bundled server.
        from a2m_server.config import ObservationsConfig, ServerConfig
        from a2m_server.server import A2MServer

        db = args.db or os.environ.get("A2M_DB") or "memory.db"
        # The embedded server keeps observations for the tenant this command names.
        tenant = ObservationsConfig(org=args.org or "default", project=args.project or "default")
        embedded = A2MServer(ServerConfig(observations=tenant), db=db)
        stack.callback(embedded.close)
        client = AsyncA2MClient.in_process(embedded)
    stack.push_async_callback(client.aclose)
    return client


async def _import(client: AsyncA2MClient, config: MemoryConfig, path: Path) -> None:
    graph = KnowledgeGraph(
        client,
        config.graph,
        namespace=config.namespace,
        provenance=config.provenance(),
        session=config.session,
    )
    done = await import_graph_file(graph, path)
    print(
        f"a2m-mcp: imported {done.entities} entities, {done.observations} observations and "
        f"{done.relations} relations from {path} (what was there already is unchanged)",
        file=sys.stderr,
    )


async def serve(args: argparse.Namespace) -> None:
    """Run the server the parsed command line describes until stdin closes (stdio) or
    the process is interrupted (HTTP)."""
    config = MemoryConfig(
        namespace=args.namespace,
        agent=args.agent,
        org=args.org,
        project=args.project,
        session=args.session,
        graph_prefix=args.graph_prefix,
        local=args.url is None,
    )
    async with AsyncExitStack() as stack:
        client = await _client(args, stack)
        if args.import_graph is not None:
            await _import(client, config, Path(args.import_graph))
            return
        server = build_server(client, config, log_level=args.log_level)
        if args.transport == "stdio":
            await server.run_stdio_async()
            return
        app = server.streamable_http_app(streamable_http_path=args.path, host=args.host)
        sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((args.host, args.port))
        port = sock.getsockname()[1]
        shown = f"[{args.host}]" if ":" in args.host else args.host
        print(
            f"a2m-mcp: serving MCP at http://{shown}:{port}{args.path}", file=sys.stderr, flush=True
        )
        config_ = uvicorn.Config(app, log_level=args.log_level.lower(), lifespan="on")
        await uvicorn.Server(config_).serve(sockets=[sock])


def main(argv: Sequence[str] | None = None) -> int:
    """The ``a2m-mcp`` command."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr)
    try:
        anyio.run(serve, args)
    except KeyboardInterrupt:
        return 0
    except (ValueError, OSError) as error:
        print(f"a2m-mcp: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
