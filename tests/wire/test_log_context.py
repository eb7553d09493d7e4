"""Log records say whom they are about (``wire/log_context.py``): the session and turn bound where
they start, the current span's trace ids, as readable text by default or one JSON object a line."""

from __future__ import annotations

import asyncio
import contextvars
import io
import json
import logging
from collections.abc import Iterator

import pytest
import uvicorn
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from wire import log_context
from wire.access_log import RedactQuery, access_log_on
from wire.redact import redact_query


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger of its own with a JSON handler writing into a buffer."""
    out = io.StringIO()
    logger = logging.getLogger("tests.log_context")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    h = log_context.handler("json", out)
    logger.addHandler(h)
    yield logger, out
    logger.removeHandler(h)


def lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_bound_ids_reach_the_records_of_their_task_only(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = captured

    async def session(sid: str, turn: str) -> None:
        log_context.bind(session_id=sid)
        await asyncio.sleep(0)
        log_context.bind(turn_id=turn, response_id="resp_" + turn)
        await asyncio.sleep(0)  # the other session runs in between: its ids must not leak here
        logger.info("answered %s", turn)

    await asyncio.gather(session("sess_a", "t1"), session("sess_b", "t2"))
    logger.info("outside any session")
    records = {r["message"]: r for r in lines(out)}
    assert records["answered t1"]["session_id"] == "sess_a"
    t2 = records["answered t2"]
    assert (t2["session_id"], t2["turn_id"], t2["response_id"]) == ("sess_b", "t2", "resp_t2")
    assert {"session_id", "turn_id", "trace_id"}.isdisjoint(records["outside any session"])
    assert records["outside any session"]["level"] == "INFO"
    assert records["outside any session"]["logger"] == "tests.log_context"


def test_a_recording_span_puts_its_trace_and_span_ids_on_the_record(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = captured
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    with provider.get_tracer("test").start_as_current_span("turn"):
        logger.info("in a span")
    logger.info("after it")
    (span,) = exported.get_finished_spans()
    inside, after = lines(out)
    assert inside["trace_id"] == format(span.context.trace_id, "032x")
    assert inside["span_id"] == format(span.context.span_id, "016x")
    assert len(str(inside["trace_id"])) == 32 and len(str(inside["span_id"])) == 16
    assert "trace_id" not in after and "span_id" not in after  # no valid span: omitted


def test_text_is_the_default_and_shows_the_context_after_the_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(log_context.FORMAT_ENV, raising=False)
    assert log_context.log_format() == "text"
    monkeypatch.setenv(log_context.FORMAT_ENV, "JSON")
    assert log_context.log_format() == "json"
    assert log_context.log_format("text") == "text"  # the option wins over the variable
    with pytest.raises(ValueError, match="use text or json"):
        log_context.log_format("xml")

    out = io.StringIO()
    record = logging.LogRecord("edge", logging.WARNING, __file__, 1, "slow %s", ("turn",), None)
    h = log_context.handler("text", out)

    def emit() -> None:
        log_context.bind(session_id="sess_x", turn_id="t9")
        h.handle(record)

    contextvars.copy_context().run(emit)
    line = out.getvalue().strip()
    assert line.endswith("WARNING edge: slow turn [session_id=sess_x turn_id=t9]"), line
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


def test_an_exception_is_one_json_line_with_its_traceback(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = captured
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.exception("turn failed")
    (record,) = lines(out)
    assert "RuntimeError: boom" in str(record["exception"])


def test_secret_looking_query_values_are_masked_in_access_records() -> None:
    assert redact_query("/v1/realtime?model=m&api_key=sk-123&session_id=s") == (
        "/v1/realtime?model=m&api_key=***&session_id=s"
    )
    assert redact_query("/x?token=a&client_secret=b#f") == "/x?token=***&client_secret=***#f"
    assert redact_query("/health") == "/health"
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/status?key=hunter2", "1.1", 200), None,
    )  # fmt: skip
    assert RedactQuery().filter(record)
    assert "hunter2" not in record.getMessage() and "/status?key=***" in record.getMessage()


def test_answered_probes_are_left_out_of_the_access_log_and_failed_ones_kept() -> None:
    def access(path: str, status: int) -> logging.LogRecord:
        args = ("127.0.0.1:5", "GET", path, "1.1", status)
        return logging.LogRecord(
            "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d', args, None
        )

    assert not RedactQuery().filter(access("/health", 200))
    assert not RedactQuery().filter(access("/metrics?x=1", 200))
    assert RedactQuery().filter(access("/metrics", 401))
    assert RedactQuery().filter(access("/healthz", 200))


def test_configure_replaces_its_own_handler_and_keeps_the_others() -> None:
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    others = [h for h in before if not isinstance(h, log_context.ProcessHandler)]  # e.g. pytest's
    try:
        log_context.configure("text")
        log_context.configure("json")
        ours = [h for h in root.handlers if isinstance(h, log_context.ProcessHandler)]
        assert len(ours) == 1 and isinstance(ours[0].formatter, log_context.JsonFormatter)
        assert [h for h in root.handlers if h not in ours] == others
    finally:
        root.handlers[:] = before
        root.setLevel(level)


def test_access_log_on_takes_uvicorns_loggers_back_from_its_default_config() -> None:
    # Any uvicorn started in the process with its own logging config gives ``uvicorn`` and
    # ``uvicorn.access`` handlers of their own, not propagating: our format (and a test's capture)
    # would never see an access line. This is what the full suite's webhook receiver did.
    names = ("uvicorn", "uvicorn.access", "uvicorn.error")
    loggers = [logging.getLogger(n) for n in names]
    saved = [(list(x.handlers), x.propagate, x.level, x.disabled) for x in loggers]
    root, out = logging.getLogger(), io.StringIO()
    ours = logging.StreamHandler(out)
    try:
        uvicorn.Config(app=lambda *_: None)  # uvicorn's LOGGING_CONFIG, applied on construction
        assert not logging.getLogger("uvicorn").propagate  # the trap this test is about
        loggers[1].disabled = True  # what a library's dictConfig does to loggers it does not name
        access_log_on()
        root.addHandler(ours)
        args = ("127.0.0.1:5", "GET", "/v1/models?api_key=sk-secret", "1.1", 401)
        logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/%s" %d', *args)
        assert out.getvalue().strip() == '127.0.0.1:5 - "GET /v1/models?api_key=*** HTTP/1.1" 401'
    finally:
        root.removeHandler(ours)
        for x, (handlers, propagate, level, disabled) in zip(loggers, saved, strict=True):
            x.handlers[:], x.propagate, x.disabled = handlers, propagate, disabled
            x.setLevel(level)
