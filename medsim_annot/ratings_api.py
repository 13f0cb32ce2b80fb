"""The ratings endpoint over HTTP: ``POST /api/annotate/ratings`` (Starlette route).

The annotation widget posts its ordered list of unacknowledged ratings here and reads the
acknowledgements and window refills from the answer: no Streamlit rerun per key press.
``serve.py`` mounts :func:`routes` beside Streamlit (``st.App``). This module only speaks
HTTP; the rules live in :func:`medsim_annot.services.rating_queue.exchange` and the message
shapes in :mod:`data_schemas.widget`.

- Before anything is read: a request from a page of another origin (an ``Origin`` header
  whose host and port are not the ``Host`` the request was sent to, nor listed in
  ``MEDSIM_ALLOWED_ORIGINS``) is refused (403), and so is a body that is not
  ``Content-Type: application/json`` (415). Both are defence in depth: the bearer token
  already keeps other sites out.
- Auth: ``Authorization: Bearer <token>`` (minted by the Annotate page, checked in the
  store); never a cookie, so no other site can make a browser send it. The token is looked
  up, and the annotator's request limit checked, *before* the body is read: a large body
  with a bad token costs one indexed read.
- The body is read up to :data:`~data_schemas.widget.MAX_BODY_BYTES` (413 beyond) and
  validated against :class:`~data_schemas.widget.RatingsRequest` (400 with the reason).
- Every refusal is an :class:`~data_schemas.widget.ApiError` with its HTTP status and
  nothing stored. Stateless: all state is in the store, so any process can answer.
- Language: the refusals (a request's ``reason``, a rating's ``message``) are written in the
  language the widget names in the request (``lang``, its page's language; one the app does
  not speak is refused as invalid), before the body is read in the request's
  ``Accept-Language``, else English.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from data_schemas.widget import (
    ERROR_STATUS,
    MAX_BODY_BYTES,
    RATE_WINDOW_S,
    RATINGS_PATH,
    ApiError,
    RatingsRequest,
)
from medsim_annot import i18n
from medsim_annot.errors import StoreUnavailable, UsageProblem
from medsim_annot.i18n import N_, t
from medsim_annot.services import rating_queue
from medsim_annot.services.people import tokens

_log = logging.getLogger(__name__)
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
_DEFAULT_PORTS = {"http": 80, "https": 443}
_T = TypeVar("_T")
TOO_MANY = N_("too many requests from this session in a short time")


async def _in_language(lang: str, fn: Callable[..., _T], *args, **kwargs) -> _T:
    """*fn* run in the thread pool with *lang* as the language of its messages."""

    def run() -> _T:
        with i18n.language(lang):
            return fn(*args, **kwargs)

    return await run_in_threadpool(run)


def _error(code: str, reason: str, retry_after_ms: int | None = None) -> Response:
    body = ApiError(error=code, reason=reason, retry_after_ms=retry_after_ms)  # type: ignore[arg-type]
    return Response(
        body.model_dump_json(exclude_none=True),
        status_code=ERROR_STATUS[code],
        media_type="application/json",
        headers=_HEADERS,
    )


async def _body(request: Request) -> bytes | None:
    """The request body, or ``None`` when it is larger than MAX_BODY_BYTES (read no further)."""
    length = request.headers.get("content-length")
    if length is not None:
        try:
            if int(length) > MAX_BODY_BYTES:
                return None
        except ValueError:
            return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _first_problem(exc: ValidationError) -> str:
    err = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "body"
    # Pydantic's own wording of the problem stays English (a contract break is a bug of the
    # widget or a script, not something a doctor does).
    return t("{field}: {problem}", field=where, problem=err.get("msg", "invalid"))


def _allowed_origins() -> frozenset[str]:
    raw = os.environ.get("MEDSIM_ALLOWED_ORIGINS", "")
    return frozenset(o.strip().rstrip("/").lower() for o in raw.split(",") if o.strip())


def _host_port(netloc: str, scheme: str | None) -> tuple[str, int | None] | None:
    try:
        parts = urlsplit(f"//{netloc}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    if port is None and scheme is not None:
        port = _DEFAULT_PORTS.get(scheme)
    return parts.hostname.lower(), port


def foreign_origin(origin: str | None, host: str | None) -> bool:
    """Whether a request with these ``Origin`` and ``Host`` headers came from a page of
    another origin. No ``Origin`` (not a browser's cross-site request) is not foreign; an
    opaque one (``null``) is. The scheme is not compared: behind a TLS proxy the app sees
    plain HTTP. When ``Host`` carries no port (a proxy's ``Host $host``), only the host
    names are compared."""
    if origin is None:
        return False
    origin = origin.strip().rstrip("/").lower()
    if origin in _allowed_origins():
        return False
    parts = urlsplit(origin)
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc:
        return True
    seen = _host_port(parts.netloc, parts.scheme)
    target = _host_port(host or "", None)
    if seen is None or target is None:
        return True
    if target[1] is None:
        return seen[0] != target[0]
    return seen != target


def _json_body(content_type: str | None) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() == "application/json"


async def _refused(grant: tokens.Grant, code: str, reason: str, lang: str) -> Response:
    """A body refused after a good token: counted against the request limit too."""
    try:
        within = await _in_language(lang, rating_queue.count_refused, grant)
    except StoreUnavailable as exc:
        return _error("unavailable", str(exc), retry_after_ms=1000)
    if not within:
        return _error("rate_limited", t(TOO_MANY), retry_after_ms=RATE_WINDOW_S * 1000)
    return _error(code, reason)


async def ratings(request: Request) -> Response:
    """Commit the widget's pending ratings and answer with acknowledgements and pairs, every
    message in the request's language (its ``lang``, else ``Accept-Language``, else English)."""
    lang = i18n.from_accept_language(request.headers.get("accept-language"))
    with i18n.language(lang):
        return await _ratings(request, i18n.current_language())


async def _ratings(request: Request, lang: str) -> Response:
    if foreign_origin(request.headers.get("origin"), request.headers.get("host")):
        return _error("forbidden", t("this endpoint answers the app's own pages only"))
    token = tokens.bearer(request.headers.get("authorization"))
    if token is None:
        return _error("unauthorized", t(tokens.TOKEN_NEEDED))
    if not _json_body(request.headers.get("content-type")):
        return _error("unsupported", t("the body must be sent as Content-Type: application/json"))
    try:
        # The token and the request limit first: a large body with a bad token is not read.
        grant = await _in_language(lang, rating_queue.admit, token)
    except tokens.TokenRefusedError as exc:
        return _error(exc.code, exc.reason)
    except rating_queue.RateLimitedError as exc:
        return _error("rate_limited", str(exc), retry_after_ms=RATE_WINDOW_S * 1000)
    except StoreUnavailable as exc:
        return _error("unavailable", str(exc), retry_after_ms=1000)
    body = await _body(request)
    if body is None:
        return await _refused(
            grant,
            "too_large",
            t(
                "the request body is larger than {limit} bytes",
                limit=i18n.fmt_int(MAX_BODY_BYTES),
            ),
            lang,
        )
    try:
        message = RatingsRequest.model_validate_json(body or b"{}")
    except ValidationError as exc:
        return await _refused(grant, "invalid", _first_problem(exc), lang)
    if message.lang is not None:
        asked = i18n.normalise(message.lang)
        if asked is None:
            return await _refused(
                grant,
                "invalid",
                t("lang: {tag} is not a language this app speaks", tag=message.lang),
                lang,
            )
        lang = i18n.set_language(asked)
    try:
        reply = await _in_language(lang, rating_queue.exchange, token, message, grant=grant)
    except tokens.TokenRefusedError as exc:
        return _error(exc.code, exc.reason)
    except rating_queue.RateLimitedError as exc:
        return _error("rate_limited", str(exc), retry_after_ms=RATE_WINDOW_S * 1000)
    except StoreUnavailable as exc:
        return _error("unavailable", str(exc), retry_after_ms=1000)
    except UsageProblem as exc:
        return _error("problem", str(exc))
    return Response(reply.model_dump_json(), media_type="application/json", headers=_HEADERS)


def routes() -> list[Route]:
    """The routes ``serve.py`` mounts beside Streamlit."""
    return [Route(RATINGS_PATH, ratings, methods=["POST"])]
