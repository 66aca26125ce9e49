"""The service's gunicorn worker: gunicorn's threaded worker (gthread) with the two edges of
HTTP that only the server reaches (``deploy/gunicorn.conf.py`` runs it; docs/deploy.md,
"Request limits").

- **Its own refusals are problems.** What gunicorn refuses before the application sees the
  request (a request line over 8190 bytes, header fields past its limits, a CR, LF or NUL in
  a header, a request that is not HTTP) is answered as every other refusal is: an
  ``application/problem+json`` body whose ``type`` is a page under ``/problems/``
  (:func:`service.api.problems.refusal_document`), with an ``X-Request-Id``, where gunicorn
  writes an HTML page. The status is gunicorn's; a header at fault is named in ``errors``.
- **A refused body is read before the connection closes** (nginx's "lingering close"). The
  application refuses a body longer than it reads by its ``Content-Length``, unread (413).
  Closing a socket with unread data in it makes the kernel reset the connection, and a
  client that writes its whole request before it reads (most do) sees its write fail
  instead of the 413. So after the answer is written, what is left of the request body is
  read and discarded, up to :data:`LINGER_BYTES` and :data:`LINGER_SECONDS` (with
  :data:`LINGER_IDLE_SECONDS` at most between two reads); past those the connection is
  closed. gunicorn drains a kept-alive connection's body itself, but only 64 KiB of it.
- **Waiting holds no thread.** A long-poll that must wait, or an event stream, hands its
  connection to the worker's waiting room (:mod:`service.live.room`, an asyncio loop on a
  thread of its own) instead of parking a request thread: the view puts a ticket in the
  environ (:mod:`service.live`) and the worker, seeing it, writes nothing (a long-poll) or
  only the stream's head and first events, and gives the connection to the room. The room
  gives a long-poll back to a request thread when there is something to answer (the request
  is run again, and written as any other), and has a stream's next events rendered on one.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import socket
import ssl
import sys
import time
from datetime import datetime
from typing import Any

from gunicorn import util
from gunicorn.http import errors as http_errors
from gunicorn.http import wsgi
from gunicorn.http.wsgi import Response, default_environ
from gunicorn.workers.gthread import ThreadWorker

from service import live
from service.api.context import new_request_id, request_id
from service.api.problems import PROBLEM_JSON, refusal_document
from service.errors import (
    ExpectationFailed,
    FieldError,
    Forbidden,
    HeaderFieldsTooLarge,
    InternalError,
    MalformedRequest,
    NotImplementedCoding,
    ServiceError,
    UriTooLong,
)
from service.live.room import Room

#: At most this much of a request body the application left unread is read and discarded
#: before the connection closes (a 10 MB upload refused by its length gets its 413).
LINGER_BYTES = 64 * 1024 * 1024
#: ... and for at most this long in all,
LINGER_SECONDS = 30.0
#: ... and at most this long waiting for the next piece of it.
LINGER_IDLE_SECONDS = 5.0
_PIECE = 256 * 1024
#: The longest ``detail`` taken from gunicorn's message (it may quote what the client sent).
_DETAIL_CHARS = 300


#: What a request thread returns for a connection handed to the waiting room.
PARKED: Any = object()
#: The environ entries a stream's later renders reuse (the request's own, not the socket's).
_WSGI_KEPT = ("wsgi.version", "wsgi.errors", "wsgi.multithread", "wsgi.multiprocess")


class Worker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's gthread worker, answering its own refusals as problems, reading a refused
    body before it closes, and holding waiting connections in a waiting room (the module
    docstring says why)."""

    alive: bool
    room: Room | None = None
    _drained = False

    def run(self) -> None:
        from service.live.notices import current_url

        app = getattr(self.wsgi, "extensions", {}).get("gin")
        if app is not None:  # the service's application: wait for its matches' notices
            engine = app["engine"]

            self.room = Room(
                current_url(),
                wake=self._wake,
                render=self._render,
                release=self._release,
                versions=lambda topics: watched_versions(engine, topics),
                executor=self.tpool,
            )
            self.room.start()
        try:
            super().run()
        finally:
            if self.room is not None:
                self.room.stop()

    def murder_keepalived(self, force: bool = False) -> None:
        super().murder_keepalived(force)
        if not self.alive and not self._drained and self.room is not None:
            self._drained = True  # stopping: parked long-polls answer, streams end
            self.room.drain()

    def handle_request(self, req: Any, conn: Any) -> Any:
        keep_alive = self._serve(req, conn)
        if keep_alive is PARKED:
            return PARKED
        return discard_body(req, conn.sock) and bool(keep_alive)

    def _keepalive_after(self, conn: Any, keepalive: Any) -> Any:
        if keepalive is PARKED:
            return PARKED
        return super()._keepalive_after(conn, keepalive)

    def finish_request(self, conn: Any, fs: Any) -> None:
        try:
            parked = not fs.cancelled() and fs.result() is PARKED
        except Exception:
            parked = False
        if not parked:
            super().finish_request(conn, fs)
            return
        ticket, conn.gin_ticket = conn.gin_ticket, None
        if self.room is None:
            self.nr_conns -= 1
            conn.close()
            return
        self.room.take(conn, conn.sock, ticket)

    # --- the waiting room's callbacks -------------------------------------------------

    def _wake(self, conn: Any) -> None:
        """Run a parked long-poll again on a request thread (from the room's thread)."""
        try:
            conn.sock.setblocking(True)
            fs = self.tpool.submit(self._resume, conn)
        except Exception:  # the pool is shut down: the worker is gone
            self._release(conn)
            return
        fs.add_done_callback(lambda fut: self.method_queue.defer(self.finish_request, conn, fut))

    def _resume(self, conn: Any) -> Any:
        req, conn.gin_request = conn.gin_request, None
        req.gin_resumed = True
        try:
            return self._keepalive_after(conn, self.handle_request(req, conn))
        except (http_errors.NoMoreData, StopIteration):
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.log.exception("Socket error answering a long-poll.")
            return False
        except Exception as exc:
            self.handle_error(req, conn.sock, conn.client, exc)
            return False

    def _release(self, conn: Any) -> None:
        """The room is done with ``conn``: close it (on the main thread, which counts it)."""

        def close() -> None:
            self.nr_conns -= 1
            conn.close()

        self.method_queue.defer(close)

    def _render(self, conn: Any, sent: int) -> tuple[bytes, int, bool]:
        """A stream's events after version ``sent``, through the application (on a request
        thread): (bytes, the version now sent, whether the stream ends)."""
        environ = dict(conn.gin_environ)
        environ["wsgi.input"] = io.BytesIO()
        environ[live.RENDER] = sent
        answer: dict[str, int] = {}

        def start_response(status: str, headers: Any, exc_info: Any = None) -> Any:
            answer["status"] = int(status[:3])
            return lambda _data: None

        respiter = self.wsgi(environ, start_response)
        try:
            body = b"".join(respiter)
        finally:
            if hasattr(respiter, "close"):
                respiter.close()
        ticket = environ.get(live.TICKET)
        if answer.get("status") != 200:  # the caller may no longer watch it (a revoked key)
            return b"event: error\ndata: " + body.replace(b"\n", b"") + b"\n\n", sent, True
        if isinstance(ticket, live.Stream):
            return body, ticket.sent, False
        return body, sent, True

    # --- gunicorn's handle_request, handing waiting connections to the room -------------

    def _serve(self, req: Any, conn: Any) -> Any:
        environ: dict[str, Any] = {}
        resp = None
        try:
            self.cfg.pre_request(self, req)
            request_start = datetime.now()
            resp, environ = wsgi.create(req, conn.sock, conn.client, conn.server, self.cfg)
            environ["wsgi.multithread"] = True
            if self.room is not None and self.alive:
                environ[live.ROOM] = self.room
            if getattr(req, "gin_resumed", False):
                environ[live.RESUMED] = True
            self.nr += 1
            if self.nr >= self.max_requests:
                if self.alive:
                    self.log.info("Autorestarting worker after current request.")
                    self.alive = False
                resp.force_close()

            if (
                not self.alive
                or not self.cfg.keepalive
                or len(self.keepalived_conns) >= self.max_keepalived
            ):
                resp.force_close()

            respiter = self.wsgi(environ, resp.start_response)
            ticket = environ.get(live.TICKET)
            if isinstance(ticket, live.Wait):  # nothing written: the room holds it
                if hasattr(respiter, "close"):
                    respiter.close()
                conn.gin_ticket, conn.gin_request = ticket, req
                return PARKED
            try:
                if isinstance(respiter, environ["wsgi.file_wrapper"]):
                    resp.write_file(respiter)
                else:
                    for item in respiter:
                        resp.write(item)
                if isinstance(ticket, live.Stream):  # the head and first events: the room
                    conn.gin_ticket = ticket  # writes the rest
                    conn.gin_environ = {
                        key: value
                        for key, value in environ.items()
                        if isinstance(value, str) or key in _WSGI_KEPT
                    }
                else:
                    resp.close()
            finally:
                request_time = datetime.now() - request_start
                self.log.access(resp, req, environ, request_time)
                if hasattr(respiter, "close"):
                    respiter.close()
            if isinstance(ticket, live.Stream):
                return PARKED
            if resp.should_close():
                self.log.debug("Closing connection.")
                return False
        except OSError:
            util.reraise(*sys.exc_info())
        except (Exception, SystemExit):
            if resp and resp.headers_sent:
                self.log.exception("Error handling request")
                util.close_graceful(conn.sock)
                raise StopIteration() from None
            raise
        finally:
            try:
                self.cfg.post_request(self, req, environ, resp)
            except Exception:
                self.log.exception("Exception in post_request hook")
        return True

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        started = datetime.now()
        addr = addr or ("", -1)  # a unix socket
        if req is None and isinstance(
            exc, http_errors.InvalidHeader | http_errors.InvalidHeaderName
        ):
            req = getattr(exc, "req", None)  # the request whose headers were being read
        error = server_refusal(exc)
        if isinstance(error, InternalError):
            self.log.exception("Error handling request %s", getattr(req, "uri", "(no URI read)"))
        else:
            self.log.warning("Invalid request from ip=%s: %s", addr[0], exc)
        given = _header(req, "X-REQUEST-ID") if req is not None else None
        answer_id = request_id(given) if given is not None else new_request_id()
        body = refusal_document(error, getattr(req, "path", None)).encode()
        head = (
            f"HTTP/1.1 {error.status} {error.title}\r\n"
            "Connection: close\r\n"
            f"Content-Type: {PROBLEM_JSON}\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"X-Request-Id: {answer_id}\r\n\r\n"
        )
        try:
            util.write_nonblock(client, head.encode("latin-1") + body)
        except Exception:  # the client is gone: nothing to answer
            self.log.debug("Failed to send error message.")
        if req is not None and self.log.access_log.isEnabledFor(logging.INFO):
            self._log_access(req, client, addr, error, answer_id, len(body), started)

    def _log_access(
        self,
        req: Any,
        client: Any,
        addr: Any,
        error: ServiceError,
        answer_id: str,
        length: int,
        started: datetime,
    ) -> None:
        """gunicorn's access log line for a refused request, as gunicorn writes it."""
        try:
            wsgi = default_environ(req, client, self.cfg)  # the request's, not the process's
            wsgi["REMOTE_ADDR"], wsgi["REMOTE_PORT"] = addr[0], str(addr[1])
            resp = Response(req, client, self.cfg)
            resp.status = f"{error.status} {error.title}"
            resp.headers = [("X-Request-Id", answer_id)]
            resp.response_length = length
            self.log.access(resp, req, wsgi, datetime.now() - started)
        except Exception:  # a request read only in part: no line rather than no answer
            self.log.debug("No access log line for the refused request.")


def watched_versions(engine: Any, topics: list[str]) -> dict[str, int]:
    """The current versions of the matches and tournaments a waiting room watches, by their
    topics (:class:`service.live.Stream`)."""
    from service.usecases import play, tournaments

    held = {tid: topic for topic in topics if (tid := live.tournament_of(topic)) is not None}
    versions = play.peek_versions(engine, [t for t in topics if live.tournament_of(t) is None])
    for tid, version in tournaments.peek_versions(engine, list(held)).items():
        versions[held[tid]] = version
    return versions


def server_refusal(exc: BaseException) -> ServiceError:
    """The problem for an error gunicorn's worker caught, with gunicorn's status: a request
    it refused (its limits, a request that is not HTTP), else a failure of its own (500)."""
    detail = str(exc)[:_DETAIL_CHARS]
    if isinstance(exc, http_errors.InvalidResponseHeader | http_errors.InvalidResponseHeaderName):
        pass  # a header the application tried to send: the application's fault
    elif isinstance(exc, http_errors.LimitRequestLine):
        return UriTooLong(f"The request line is longer than the server reads ({detail}).")
    elif isinstance(exc, http_errors.LimitRequestHeaders):
        return HeaderFieldsTooLarge(
            f"The header fields are more, or longer, than the server reads ({detail})."
        )
    elif isinstance(exc, http_errors.InvalidHeader | http_errors.InvalidHeaderName):
        name = str(getattr(exc, "hdr", "")).title() or "(headers)"
        message = (
            "Given twice, or with a value that does not say where the body ends."
            if name in ("Content-Length", "Transfer-Encoding")
            else "Not a valid header field: a name is a token, a value has no CR, LF or NUL."
        )
        return MalformedRequest(
            f"The request's {name} header cannot be read: {message}",
            errors=[FieldError(name, message)],
        )
    elif isinstance(exc, http_errors.UnsupportedTransferCoding):
        return NotImplementedCoding(f"{detail}; only chunked is read.")
    elif isinstance(exc, http_errors.ExpectationFailed):
        return ExpectationFailed(detail)
    elif isinstance(exc, http_errors.ForbiddenProxyRequest | ssl.SSLError):
        return Forbidden(detail)
    elif isinstance(exc, http_errors.ConfigurationProblem):
        pass
    elif isinstance(exc, http_errors.ParseException):
        return MalformedRequest(f"The request is not valid HTTP: {detail}.")
    return InternalError("The server failed to answer; the error has been logged.")


def discard_body(req: Any, sock: socket.socket) -> bool:
    """Read and drop what is left of ``req``'s body, within the linger bounds; whether all of
    it was read (else the connection must close, the next request's start unknown)."""
    body = req.body
    if body is None:
        return True
    if getattr(body, "failed", False):
        return False  # reading it raised (a malformed chunk): where it ends is unknown
    if getattr(body.reader, "length", None) == 0:
        return True  # read to its end (or empty): the common case, no system call
    start = time.monotonic()
    prior = sock.gettimeout()
    read = 0
    try:
        while read <= LINGER_BYTES:
            left = LINGER_SECONDS - (time.monotonic() - start)
            if left <= 0:
                return False
            sock.settimeout(min(left, LINGER_IDLE_SECONDS))
            piece = body.read(_PIECE)
            if not piece:
                return True
            read += len(piece)
        return False
    except (OSError, http_errors.ParseException, http_errors.NoMoreData):
        return False  # timed out, the client went away, or the body is not valid chunked
    finally:
        with contextlib.suppress(OSError):  # the socket is closed already
            sock.settimeout(prior)


def _header(req: Any, name: str) -> str | None:
    for key, value in getattr(req, "headers", ()):
        if key == name:
            return str(value)
    return None
