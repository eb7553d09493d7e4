"""What the command line prints is the text it was given: tools' messages carry brackets
(HAProxy's ``[ALERT] ... [/path/frontdoor.cfg:53]``, ``pip install 'voicemesh[k8s]'``) that rich
would read as markup and, on a closing tag it cannot match, raise instead of printing the failure."""

from __future__ import annotations

import pytest

from voicemesh.cli.common import console, fail, progress


def _unwrapped(printed: str) -> str:
    return " ".join(printed.split())  # the console wraps at its width


TOOL_MESSAGE = "[ALERT] (1) : config : parsing [/tmp/run/frontdoor.cfg:53] : 'bind' failed [k8s]"


def test_a_progress_line_with_brackets_is_printed_as_it_is() -> None:
    with console.capture() as captured:
        progress(TOOL_MESSAGE)
    assert TOOL_MESSAGE in _unwrapped(captured.get())


def test_a_failure_with_brackets_is_printed_as_it_is_and_exits() -> None:
    with console.capture() as captured, pytest.raises(SystemExit) as exited:
        fail(TOOL_MESSAGE, code=3)
    assert exited.value.code == 3
    assert TOOL_MESSAGE in _unwrapped(captured.get())


def test_a_long_failure_is_one_line_whatever_the_console_width() -> None:
    # A message naming a long path was cut at 80 columns, mid-phrase: a log grepped for it missed it.
    message = "/tmp/pytest-of-root/pytest-123/test_edge_key_files0/a-long-directory/keys.txt holds no key"
    with console.capture() as captured, pytest.raises(SystemExit):
        fail(message)
    assert captured.get().strip() == f"error: {message}"
