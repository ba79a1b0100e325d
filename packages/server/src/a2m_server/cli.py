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
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn, TextIO
from urllib.parse import urlsplit, urlunsplit

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
    args.db_given = args.db is not None or "A2M_DB" in os.environ
    if args.db is None:
        args.db = os.environ.get("A2M_DB", "a2m.db")
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

    export = commands.add_parser(
        "export",
        help="write every record of an existing store to stdout as JSON Lines",
        description="Write every record of an existing store to stdout as JSON Lines "
        "(an a2m-export); progress goes to stderr when it is a terminal.",
    )
    _store_options(export, default_log_level="warning")
    restore = commands.add_parser(
        "import",
        help="load records written by export",
        description="Load the records of an a2m-export into a store, skipping ids it "
        "already holds. The whole file is checked before anything is written (or created); "
        "progress goes to stderr when it is a terminal.",
    )
    _store_options(restore, default_log_level="warning")
    restore.add_argument("dump", metavar="FILE", help="a file written by a2m-server export")
    return parser


def _store_options(parser: argparse.ArgumentParser, *, default_log_level: str) -> None:
    """The flags every subcommand takes: where the store is, and logging."""
    parser.add_argument(
        "--db",
        default=None,
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
    parser.add_argument(
        "--log-level",
        choices=_LOG_LEVELS,
        default=default_log_level,
        help=f"logging on stderr (default: {default_log_level})",
    )


def _common_options(parser: argparse.ArgumentParser, *, default_log_level: str) -> None:
    """The flags of the serving subcommands: the store's, and how it serves."""
    _store_options(parser, default_log_level=default_log_level)
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
    read_only = getattr(args, "read_only", None)
    exact_ranking = getattr(args, "exact_ranking", None)
    capabilities = getattr(args, "capabilities", None)
    embedder = getattr(args, "embedder", None)
    re_embed = getattr(args, "re_embed", None)
    try:
        if read_only is not None:
            config = dataclasses.replace(config, read_only=read_only)
        if exact_ranking is not None:
            config = dataclasses.replace(config, exact_ranking=exact_ranking)
        if embedder is not None:
            config = dataclasses.replace(config, embedder=embedder or None)
        if re_embed is not None:
            config = dataclasses.replace(config, re_embed=re_embed)
        if capabilities is not None:
            names = [name.strip() for name in capabilities.split(",") if name.strip()]
            if not names:
                raise _UsageError("--capabilities needs at least one capability")
            config = config.with_capabilities(names)
    except ValueError as exc:
        raise _UsageError(_one_line(exc)) from None
    return config


def _store_path(db: str) -> Path | None:
    """The SQLite file ``db`` names (None for PostgreSQL or an in-memory store)."""
    from .store import is_postgres_url

    if is_postgres_url(db) or db == ":memory:" or db.startswith("file:"):
        return None
    return Path(db).expanduser().resolve()


def _describe_store(db: str) -> str:
    """Where the store is, for a log line: a file's absolute path, or the URL without
    its password."""
    from .store import is_postgres_url

    if is_postgres_url(db):
        return _without_password(db)
    path = _store_path(db)
    return str(path) if path is not None else db


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    query = "&".join(
        pair for pair in parts.query.split("&") if not pair.lower().startswith("password=")
    )
    if parts.password is None:
        return urlunsplit(parts._replace(query=query))
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username}:***@{host}" if parts.username else f"***@{host}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _require_existing_store(db: str, what: str) -> None:
    """Refuse, creating nothing, when ``db`` names a SQLite file that is not there."""
    path = _store_path(db)
    if path is not None and not path.exists():
        raise _UsageError(
            f"no store at {path}: {what} reads an existing store; check --db (or $A2M_DB)"
        )


def _open_server(args: argparse.Namespace, config: ServerConfig) -> A2MServer:
    import sqlite3

    from .server import A2MServer
    from .store import is_postgres_url

    path = _store_path(args.db)
    if path is not None and not path.parent.is_dir():
        raise _UsageError(
            f"cannot open the store at {path}: the folder {path.parent} does not exist"
        )
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

    _require_existing_store(args.db, "export")
    # Moving records embeds nothing: a served store back-fills what the dump lacks.
    server = _open_server(args, dataclasses.replace(config, embedder=None))
    progress = _Progress("exported")
    try:
        count = export_records(server.store, sys.stdout, progress=progress.update)
        sys.stdout.flush()
    finally:
        server.close()
        progress.finish()
    log.info("exported %d records from %s", count, _describe_store(args.db))
    return EXIT_OK


def _import(args: argparse.Namespace, config: ServerConfig) -> int:
    from .store import StoreError
    from .transfer import DumpError, check_dump, import_records

    try:
        source = open(args.dump, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise _UsageError(f"{args.dump}: {_one_line(exc)}") from None
    with source:
        try:
            # The whole file first: a bad dump creates no store and writes nothing.
            check_dump(source)
        except DumpError as exc:
            _fail(f"{args.dump}: {exc}; nothing was imported")
            return EXIT_FAILURE
        except UnicodeDecodeError as exc:
            _fail(f"{args.dump}: not UTF-8 text ({exc.reason}); nothing was imported")
            return EXIT_FAILURE
        source.seek(0)
        path = _store_path(args.db)
        created = path is not None and not path.exists()
        server = _open_server(args, dataclasses.replace(config, embedder=None))
        if created:
            log.warning("created a new store at %s", path)
        progress = _Progress("imported")
        try:
            read, added = import_records(server.store, source, progress=progress.update)
        except DumpError as exc:
            _fail(f"{args.dump}: {exc}; nothing was imported")
            return EXIT_FAILURE
        except StoreError as exc:
            _fail(f"{args.dump}: the store failed while importing: {exc}")
            return EXIT_FAILURE
        finally:
            server.close()
            progress.finish()
    print(
        f"imported {added} of {read} records ({read - added} already present) "
        f"into {_describe_store(args.db)}",
        file=sys.stderr,
    )
    return EXIT_OK


class _Progress:
    """A one-line progress report on stderr (records, rate, time left), only when stderr
    is a terminal: piped or redirected, an export or import stays quiet."""

    _EVERY = 0.5  # seconds between redraws

    def __init__(self, verb: str, stream: TextIO | None = None) -> None:
        self.verb = verb
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.started = time.monotonic()
        self.shown = 0.0
        self.drawn = False

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.shown < self._EVERY and done < total:
            return
        self.shown = now
        elapsed = max(now - self.started, 1e-6)
        rate = done / elapsed
        left = (total - done) / rate if rate > 0 else 0.0
        line = (
            f"{self.verb} {done:,} of {total:,} records, {rate:,.0f} records/s, "
            f"{_duration(left)} left"
        )
        self.stream.write("\r" + line + "\x1b[K")
        self.stream.flush()
        self.drawn = True

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _serve(args: argparse.Namespace, config: ServerConfig) -> int:
    import uvicorn

    from .auth import TokenFileError, load_tokens
    from .bindings.http import create_app, uvicorn_http_options

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
    server = _open_announced(args, config)
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
        _log_store(args, config)
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
            **uvicorn_http_options(),
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


def _open_announced(args: argparse.Namespace, config: ServerConfig) -> A2MServer:
    """The server over ``--db``, warning on stderr when it created the store: a mistyped
    path otherwise starts an empty memory without a word."""
    path = _store_path(args.db)
    created = path is not None and not path.exists()
    server = _open_server(args, config)
    if created:
        how = "" if args.db_given else " (no --db given, and $A2M_DB is not set)"
        log.warning("created a new store at %s%s", path, how)
    return server


def _log_store(args: argparse.Namespace, config: ServerConfig) -> None:
    """Say which store is served, once everything else has been checked (info)."""
    from .store import is_postgres_url

    log.info(
        "store: %s (%s); capabilities: %s%s",
        _describe_store(args.db),
        "PostgreSQL" if is_postgres_url(args.db) else "SQLite",
        ",".join(c for c in CAPABILITIES if c in config.capabilities),
        "; read-only" if config.read_only else "",
    )


def _stdio(args: argparse.Namespace, config: ServerConfig) -> int:
    from .bindings.stdio import run_stdio

    server = _open_announced(args, config)
    _log_store(args, config)
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


def _db_was_given(args: argparse.Namespace) -> bool:
    return (
        "--db" in sys.argv
        or any(a.startswith("--db=") for a in sys.argv)
        or ("A2M_DB" in os.environ)
    )


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
