"""uvicorn's access log, on for the edge and the region: one line a request through the process's
logging (``wire/log_context.py``: its format, text or JSON), secrets out of the query string."""

from __future__ import annotations

import logging
from typing import Any, Final

from wire.redact import redact_query

ACCESS_LOGGER: Final = "uvicorn.access"


def uvicorn_log_options() -> dict[str, Any]:
    """``uvicorn.Config`` keywords: uvicorn's own logging config off (its handlers would bypass the
    process's format), its server messages at warnings, its access log on."""
    return {"log_config": None, "log_level": "warning", "access_log": True}


PROBES: Final = frozenset({"/health", "/metrics"})
"""Polled every second or so by routers and scrapers: a line each would bury the requests."""


class RedactQuery(logging.Filter):
    """The request path of an access record (uvicorn's args: client, method, path, version, status)
    with secret-looking query values masked (``wire.redact.redact_query``); an answered probe of
    ``PROBES`` is left out (a failed one stays: it is news)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 5 and isinstance(args[2], str):
            if args[2].split("?", 1)[0] in PROBES and isinstance(args[4], int) and args[4] < 400:
                return False
            record.args = (*args[:2], redact_query(args[2]), *args[3:])
        return True


def access_log_on() -> None:
    """After ``uvicorn.Config`` (which sets its loggers' levels): access lines at INFO, redacted, and
    uvicorn's records through the process's handlers."""
    # uvicorn's default logging config (any server started in this process without ours) gives
    # ``uvicorn`` and ``uvicorn.access`` handlers of their own and stops both propagating: access
    # lines would go to uvicorn's stderr handler, past our format (and a test's capture). A
    # ``dictConfig`` elsewhere (a library's, by default) disables loggers it does not name.
    for name in ("uvicorn", ACCESS_LOGGER):
        taken = logging.getLogger(name)
        taken.handlers.clear()
        taken.propagate = True
        taken.disabled = False
    logger = logging.getLogger(ACCESS_LOGGER)
    logger.setLevel(logging.INFO)
    if not any(isinstance(f, RedactQuery) for f in logger.filters):
        logger.addFilter(RedactQuery())


__all__ = ["ACCESS_LOGGER", "PROBES", "RedactQuery", "access_log_on", "uvicorn_log_options"]
