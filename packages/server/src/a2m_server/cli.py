"""The ``a2m-server`` command: ``serve`` runs the HTTP binding under uvicorn, ``stdio``
serves one peer over stdin/stdout, ``export`` and ``import`` move records between stores
as JSON Lines.

Configuration errors are reported in one line on stderr with exit code 2, never as a
traceback; the store is closed on every way out."""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import logging
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from a2m_types import CAPABILITIES, PROTOCOL_VERSION

if TYPE_CHECKING:
    from .config import ServerConfig
    from .server import A2MServer

__all__ = ["main"]

log = logging.getLogger("a2m_server")

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

_LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


class _UsageError(Exception):
    """A bad flag, configuration or token file: reported in one line, exit code 2."""


class _Terminated(Exception):
    """SIGTERM or SIGINT asked the process to stop."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = _config(args)
        if args.command == "serve":
            return _serve(args, config)
        if args.command == "export":
            return _export(args, config)
        if args.command == "import":
            return _import(args, config)
        return _stdio(args, config)
    except _UsageError as exc:
        _fail(str(exc))
        return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="a2m-server",
        description="The bundled A2M 0.1 memory server, on embedded SQLite or PostgreSQL.",
    )
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser("serve", help="serve JSON-RPC over HTTP (§8.3)")
    _common_options(serve, default_log_level="info")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback)")
    serve.add_argument("--port", type=_port, default=8765, help="TCP port (default: 8765)")
    serve.add_argument(
        "--tokens",
        metavar="FILE",
        help='JSON file mapping bearer tokens to principals, e.g. {"token": "alice"}',
    )
    serve.add_argument(
        "--allow-origin",
        metavar="ORIGIN",
        nargs="+",
        action="extend",
        default=[],
        help="browser origin allowed to call the server (default: none)",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=_positive_int,
        default=4 * 1024 * 1024,
        metavar="N",
        help="largest request body accepted (default: 4 MiB)",
    )

    stdio = commands.add_parser("stdio", help="serve one peer over stdin/stdout (§8.2)")
    _common_options(stdio, default_log_level="warning")

    export = commands.add_parser("export", help="write every record to stdout as JSON Lines")
    _common_options(export, default_log_level="warning")
    restore = commands.add_parser("import", help="load records written by export")
    _common_options(restore, default_log_level="warning")
    restore.add_argument("dump", metavar="FILE", help="a file written by a2m-server export")
    return parser


def _common_options(parser: argparse.ArgumentParser, *, default_log_level: str) -> None:
    parser.add_argument(
        "--db",
        default=os.environ.get("A2M_DB", "a2m.db"),
        help="SQLite file, :memory:, or a postgresql://user@host/db URL "
        "(default: $A2M_DB, else ./a2m.db)",
    )
    parser.add_argument(
        "--vector-index",
        choices=("exact", "hnsw"),
        default="exact",
        help="PostgreSQL only: search vectors exactly (default) or through an HNSW index",
    )
    parser.add_argument("--config", metavar="FILE", help="TOML configuration file")
    parser.add_argument("--read-only", action="store_true", default=None, help="refuse every write")
    parser.add_argument(
        "--exact-ranking",
        action="store_true",
        default=None,
        help="rank every lexical match by exact BM25, not within the posting budget (slower)",
    )
    parser.add_argument(
        "--embedder",
        metavar="NAME",
        help="embed records and text queries that arrive without a vector: wordllama "
        "(offline; pip install 'a2m-server[embed]'), endpoint (OpenAI-compatible, from "
        "$A2M_EMBED_URL / $A2M_EMBED_MODEL / $A2M_EMBED_API_KEY), an entry point's name "
        "or module:factory (default: none)",
    )
    parser.add_argument(
        "--re-embed",
        action="store_true",
        default=None,
        help="let an embedder of another model than the store's drop its vectors and "
        "embed every record again, in the background",
    )
    parser.add_argument(
        "--capabilities",
        metavar="LIST",
        help=f"comma-separated capabilities to declare (default: all: {','.join(CAPABILITIES)})",
    )
    parser.add_argument(
        "--log-level",
        choices=_LOG_LEVELS,
        default=default_log_level,
        help=f"logging on stderr (default: {default_log_level})",
    )


def _version() -> str:
    try:
        version = metadata.version("a2m-server")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"a2m-server {version} ({PROTOCOL_VERSION})"


def _port(text: str) -> int:
    value = _int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {text}")
    return value


def _positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text}") from None


def _config(args: argparse.Namespace) -> ServerConfig:
    from .config import ServerConfig, load_config

    config = ServerConfig()
    if args.config is not None:
        try:
            config = load_config(args.config)
        except FileNotFoundError:
            raise _UsageError(f"{args.config}: configuration file not found") from None
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise _UsageError(f"{args.config}: {_one_line(exc)}") from None
    try:
        if args.read_only is not None:
            config = dataclasses.replace(config, read_only=args.read_only)
        if args.exact_ranking is not None:
            config = dataclasses.replace(config, exact_ranking=args.exact_ranking)
        if args.embedder is not None:
            config = dataclasses.replace(config, embedder=args.embedder or None)
        if args.re_embed is not None:
            config = dataclasses.replace(config, re_embed=args.re_embed)
        if args.capabilities is not None:
            names = [name.strip() for name in args.capabilities.split(",") if name.strip()]
            if not names:
                raise _UsageError("--capabilities needs at least one capability")
            config = config.with_capabilities(names)
    except ValueError as exc:
        raise _UsageError(_one_line(exc)) from None
    return config


def _open_server(args: argparse.Namespace, config: ServerConfig) -> A2MServer:
    import sqlite3

    from .server import A2MServer
    from .store import is_postgres_url

    try:
        return A2MServer(config, db=args.db, vector_index=args.vector_index)
    except (sqlite3.Error, OSError, RuntimeError, ValueError) as exc:
        where = "the database" if is_postgres_url(args.db) else f"the store at {args.db}"
        message = _one_line(exc)
        if is_postgres_url(args.db) and message.startswith(("cannot", "not a usable")):
            raise _UsageError(message) from None
        raise _UsageError(f"cannot open {where}: {message}") from None


def _export(args: argparse.Namespace, config: ServerConfig) -> int:
    from .transfer import export_records

    server = _open_server(args, config)
    try:
        count = export_records(server.store, sys.stdout)
        sys.stdout.flush()
    finally:
        server.close()
    log.info("exported %d records", count)
    return EXIT_OK


def _import(args: argparse.Namespace, config: ServerConfig) -> int:
    from .store import StoreError
    from .transfer import DumpError, import_records

    try:
        source = open(args.dump, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise _UsageError(f"{args.dump}: {_one_line(exc)}") from None
    server = _open_server(args, config)
    try:
        with source:
            read, added = import_records(server.store, source)
    except DumpError as exc:
        _fail(f"{args.dump}: {exc}; nothing was imported")
        return EXIT_FAILURE
    except UnicodeDecodeError as exc:
        _fail(f"{args.dump}: not UTF-8 text ({exc.reason}); nothing was imported")
        return EXIT_FAILURE
    except StoreError as exc:
        _fail(f"{args.dump}: the store failed: {exc}")
        return EXIT_FAILURE
    finally:
        server.close()
    print(f"imported {added} of {read} records ({read - added} already present)", file=sys.stderr)
    return EXIT_OK


def _serve(args: argparse.Namespace, config: ServerConfig) -> int:
    import uvicorn

    from .auth import TokenFileError, load_tokens
    from .bindings.http import create_app

    tokens = None
    if args.tokens is not None:
        try:
            tokens = load_tokens(args.tokens)
        except TokenFileError as exc:
            raise _UsageError(str(exc)) from None
    if tokens is None and not _is_loopback(args.host):
        log.warning(
            "serving on %s without --tokens: anyone who can reach this address can read and "
            "write the store; bind 127.0.0.1 or pass --tokens FILE",
            args.host,
        )
    server = _open_server(args, config)
    try:
        try:
            app = create_app(
                server,
                allowed_origins=args.allow_origin,
                tokens=tokens,
                max_body_bytes=args.max_body_bytes,
            )
        except ValueError as exc:
            raise _UsageError(_one_line(exc)) from None
        uvicorn_config = uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            # Below info the access log is never written, but uvicorn still formats each
            # line's arguments before the logger drops it; without it nothing is built.
            access_log=logging.getLevelName(args.log_level.upper()) <= logging.INFO,
            ws="auto",
            lifespan="off",
            server_header=False,
            timeout_graceful_shutdown=10,
        )
        with _stop_on_signals():
            # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal
            # to the handler installed here, which ends the process with exit code 0.
            uvicorn.Server(uvicorn_config).run()
    except _Terminated:
        pass
    except SystemExit as exc:
        # uvicorn exits this way when it cannot start (a port in use); it has logged why.
        return EXIT_OK if exc.code in (None, 0) else EXIT_FAILURE
    finally:
        server.close()
    return EXIT_OK


def _stdio(args: argparse.Namespace, config: ServerConfig) -> int:
    from .bindings.stdio import run_stdio

    server = _open_server(args, config)
    protocol_out = sys.stdout.buffer
    # Anything printed by mistake would corrupt the JSON-RPC stream; send it to stderr.
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        with _stop_on_signals(KeyboardInterrupt):
            run_stdio(server, stdin=sys.stdin.buffer, stdout=protocol_out)
    except _Terminated:
        pass
    finally:
        sys.stdout = real_stdout
        server.close()
    return EXIT_OK


@contextmanager
def _stop_on_signals(exception: type[BaseException] = _Terminated) -> Iterator[None]:
    """Turn SIGTERM and SIGINT into ``exception`` for the duration of a block."""

    def stop(signum: int, frame: FrameType | None) -> NoReturn:
        raise exception()

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _fail(message: str) -> None:
    print(f"a2m-server: error: {message}", file=sys.stderr)
