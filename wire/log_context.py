"""Who a log record is about, on every tier: the session, the turn, the response and the trace span.

A tier binds the ids where a session or a turn starts (``bind``); they live in context variables,
so the tasks started from there carry them too and a concurrent session's records never get them.
``ContextFilter`` (on the handler ``configure`` installs) copies them, and the current OpenTelemetry
span's trace and span ids when one is recording, onto each record; the formatters show them: text
by default, one JSON object a line with ``VOICEMESH_LOG_FORMAT=json`` (``--log-format json``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import IO, Final, Literal

from opentelemetry import trace

LogFormat = Literal["text", "json"]
FORMATS: Final = ("text", "json")
FORMAT_ENV: Final = "VOICEMESH_LOG_FORMAT"
FIELDS: Final = ("session_id", "turn_id", "response_id", "trace_id", "span_id")
"""The context a record may carry, in the order the text format shows it."""

_IDS: Final = {name: ContextVar[str | None](name, default=None) for name in FIELDS[:3]}


def bind(
    *, session_id: str | None = None, turn_id: str | None = None, response_id: str | None = None
) -> None:
    """The ids of what the current task (and the tasks it starts from now on) works on; ``None`` keeps one."""
    for name, value in (("session_id", session_id), ("turn_id", turn_id), ("response_id", response_id)):
        if value is not None:
            _IDS[name].set(value)


def current() -> dict[str, str]:
    """The bound ids and, when a span is recording, ``trace_id`` (32 hex) and ``span_id`` (16 hex)."""
    out = {name: value for name, var in _IDS.items() if (value := var.get()) is not None}
    span = trace.get_current_span().get_span_context()
    if span.is_valid:
        out["trace_id"] = format(span.trace_id, "032x")
        out["span_id"] = format(span.span_id, "016x")
    return out


class ContextFilter(logging.Filter):
    """Puts ``current()`` on each record (``record.context``, and each field by name)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.context = context = current()
        for name in FIELDS:
            setattr(record, name, context.get(name))
        return True


class TextFormatter(logging.Formatter):
    """The readable line, with the context after the message: ``[session_id=... turn_id=...]``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        context: dict[str, str] = getattr(record, "context", {})
        if context:
            line += " [" + " ".join(f"{k}={v}" for k, v in context.items()) + "]"
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, the
    context's fields when known, and ``exception`` (its traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **getattr(record, "context", {}),
        }
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def log_format(asked: str | None = None) -> LogFormat:
    """``asked``, else ``$VOICEMESH_LOG_FORMAT``, else ``text``; a clear error for anything else."""
    value = (asked or os.environ.get(FORMAT_ENV) or "text").strip().lower()
    if value == "json":
        return "json"
    if value == "text":
        return "text"
    raise ValueError(f"log format {value!r}: use text or json ({FORMAT_ENV} or --log-format)")


def handler(fmt: LogFormat, stream: IO[str] | None = None) -> logging.Handler:
    """A stream handler (stderr by default) that adds the context and formats as ``fmt`` says."""
    return _dress(logging.StreamHandler(stream or sys.stderr), fmt)


def _dress(out: logging.Handler, fmt: LogFormat) -> logging.Handler:
    out.addFilter(ContextFilter())
    out.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    return out


class ProcessHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``configure`` installs (and replaces on a second call)."""


def configure(fmt: LogFormat, level: int = logging.INFO) -> None:
    """The process's logging: one handler on the root logger, in place of the one a previous call
    installed (handlers others added, a test runner's, stay)."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, ProcessHandler)]:
        root.removeHandler(old)
    root.addHandler(_dress(ProcessHandler(sys.stderr), fmt))
    root.setLevel(level)


__all__ = [
    "FIELDS",
    "FORMATS",
    "FORMAT_ENV",
    "ContextFilter",
    "JsonFormatter",
    "LogFormat",
    "ProcessHandler",
    "TextFormatter",
    "bind",
    "configure",
    "current",
    "handler",
    "log_format",
]
