"""The streamable-HTTP transport, safe off loopback: bind rules, Host/Origin allow-lists and a bearer token.

What lives here: `HttpSettings` (frozen; validated before the server starts), `read_token` (the bearer token
from ``SFBENCH_MCP_TOKEN`` or a file, never from the command line), `BearerTokenMiddleware` (401 without the
token) and `serve_http`. What does not: the tools and the server assembly (``server.py``).

The rules:

* A loopback bind (``127.0.0.0/8``, ``::1``, ``localhost``) needs nothing more; Host/Origin checking is on
  for every loopback address, not only the three names the SDK protects by default (it leaves ``127.0.0.2``
  unprotected): Host must be the bound address or ``localhost`` with the bound port, plus any
  ``--allowed-host``.
* Any other bind (``0.0.0.0``, a LAN address, a host name) needs ``--allow-remote``, a bearer token and at
  least one ``--allowed-host`` (the names clients reach the server by); Host/Origin checking stays on with
  exactly that allow-list (Origins: ``http(s)://`` of each allowed host, plus any ``--allowed-origin``).
* With a token, every HTTP request needs ``Authorization: Bearer <token>``; a wrong or missing one is
  answered 401 before the MCP layer sees it.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["MIN_TOKEN_LENGTH", "TOKEN_VARIABLE", "BearerTokenMiddleware", "HttpSettings", "is_loopback",
           "read_token", "serve_http"]

#: Environment variable holding the bearer token.
TOKEN_VARIABLE = "SFBENCH_MCP_TOKEN"
#: Shortest token accepted: a short token can be guessed (``openssl rand -hex 32`` gives 64 characters).
MIN_TOKEN_LENGTH = 24


def is_loopback(host: str) -> bool:
    """Whether a bind address is a loopback address (any of 127.0.0.0/8, ::1) or ``localhost``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    return f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host


def read_token(token_file: Path | None, environ: dict[str, str] | os._Environ[str]) -> str | None:
    """The bearer token: from ``token_file`` if given, else from `TOKEN_VARIABLE`, else None.

    Raises:
        ValueError: both are given, the file cannot be read, or the token is shorter than `MIN_TOKEN_LENGTH`
            or holds whitespace.
    """
    from_env = environ.get(TOKEN_VARIABLE)
    if token_file is not None and from_env:
        raise ValueError(f"both --token-file and {TOKEN_VARIABLE} are set; give the token one way")
    if token_file is not None:
        try:
            token = Path(token_file).expanduser().read_text().strip()
        except OSError as error:
            raise ValueError(f"cannot read the token file {token_file} ({error.strerror}); pass a readable file "
                             "holding only the token") from None
    elif from_env:
        token = from_env.strip()
    else:
        return None
    if len(token) < MIN_TOKEN_LENGTH or any(character.isspace() for character in token):
        raise ValueError(f"the bearer token must be at least {MIN_TOKEN_LENGTH} characters without whitespace "
                         "(a short token can be guessed); make one with `openssl rand -hex 32`")
    return token


@dataclass(frozen=True)
class HttpSettings:
    """How the HTTP transport listens and whom it answers.

    Attributes:
        host: Bind address.
        port: TCP port, 1-65535.
        path: Endpoint path, starting with ``/``.
        allow_remote: Explicit opt-in to bind a non-loopback address.
        token: Bearer token every request must carry (required off loopback), or None.
        allowed_hosts: Extra Host header values accepted (``name`` or ``name:port``; ``name:*`` for any port).
        allowed_origins: Extra Origin header values accepted (e.g. ``https://app.example.org``).
    """

    host: str = "127.0.0.1"
    port: int = 8765
    path: str = "/mcp"
    allow_remote: bool = False
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 1 <= self.port <= 65535:
            raise ValueError(f"--port {self.port} is outside 1-65535; pass a free TCP port, e.g. --port 8765")
        if not self.path.startswith("/"):
            raise ValueError(f"--path {self.path!r} must start with '/', e.g. --path /mcp")
        if is_loopback(self.host):
            return
        if not self.allow_remote:
            raise ValueError(f"--host {self.host} is not a loopback address: serving beyond this machine needs "
                             "--allow-remote, a bearer token (SFBENCH_MCP_TOKEN or --token-file) and "
                             "--allowed-host NAME for each name clients use")
        if self.token is None:
            raise ValueError(f"--host {self.host} with --allow-remote needs a bearer token: set "
                             f"{TOKEN_VARIABLE} or pass --token-file PATH (never the token itself)")
        if not self.allowed_hosts:
            raise ValueError(f"--host {self.host} with --allow-remote needs --allowed-host NAME[:PORT] for each "
                             "name clients reach the server by (Host headers are checked against them)")

    def transport_security(self) -> TransportSecuritySettings:
        """Host/Origin checking, on for every bind (see the module docstring)."""
        hosts = list(self.allowed_hosts)
        if is_loopback(self.host):
            hosts = [f"{_url_host(self.host)}:{self.port}", f"localhost:{self.port}", *hosts]
        origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
        return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=list(dict.fromkeys(hosts)),
                                         allowed_origins=list(dict.fromkeys([*origins, *self.allowed_origins])))

    def check_port_free(self) -> None:
        """Fail early, in one line, when the address cannot be bound.

        Raises:
            ValueError: the port is taken or the address is not this machine's.
        """
        family = socket.AF_INET6 if ":" in self.host.strip("[]") else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((self.host.strip("[]"), self.port))
            except OSError as error:
                raise ValueError(f"cannot listen on {self.host}:{self.port} ({error.strerror}); choose another "
                                 "--port or a --host of this machine") from None


class BearerTokenMiddleware:
    """ASGI middleware answering 401 to any HTTP request without ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        """Wrap ``app``.

        Args:
            app: The MCP Starlette app.
            token: The expected token.
        """
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass lifespan and authorised requests through; answer the rest 401."""
        if scope["type"] == "http":
            given = b""
            for name, value in scope.get("headers", ()):
                if name.lower() == b"authorization":
                    given = value
            if not hmac.compare_digest(given, self._expected):
                response = JSONResponse(
                    {"error": "invalid_token",
                     "error_description": "send Authorization: Bearer <token> with the server's token"},
                    status_code=401, headers={"WWW-Authenticate": 'Bearer realm="sfbench-mcp"'})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def http_app(server: Any, settings: HttpSettings) -> ASGIApp:
    """The ASGI app: the SDK's streamable-HTTP app with explicit Host/Origin checks, behind the token check."""
    app: ASGIApp = server.streamable_http_app(streamable_http_path=settings.path,
                                              transport_security=settings.transport_security(),
                                              host=settings.host)
    return app if settings.token is None else BearerTokenMiddleware(app, settings.token)


def serve_http(server: Any, settings: HttpSettings, *, log_level: str) -> None:
    """Serve ``server`` (an `MCPServer`) over streamable HTTP until interrupted."""
    import anyio
    import uvicorn

    config = uvicorn.Config(http_app(server, settings), host=settings.host.strip("[]"), port=settings.port,
                            log_level=log_level.lower())
    anyio.run(uvicorn.Server(config).serve)
