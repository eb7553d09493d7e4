"""The talk page on WebRTC (its default transport) in a real Chromium whose microphone is a speech WAV,
against a real local deployment: the edge's ``POST /v1/realtime/calls``, Opus both ways on one
audio track, the Realtime events on the ``oai-events`` data channel.

What the page shows comes from the data channel's events; that the answer was played comes from the
browser itself: ``getStats()`` on the inbound audio (bytes, ``totalAudioEnergy``, ``audioLevel``) and
an AnalyserNode on the remote track, which an ``<audio>`` element plays.
"""

from __future__ import annotations

from playwright.async_api import Page

from tests.fixtures.edge import RunningEdge
from tests.web.driving import talk


async def test_spoken_question_over_webrtc_shows_transcript_and_plays_answer(
    page: Page, web_edge: RunningEdge
) -> None:
    snap = await talk(page, web_edge, "webrtc")

    assert snap["errors"] == [], snap["errors"]
    assert snap["transport"] == "webrtc"
    rtc = snap["webrtc"]
    assert rtc["channel"] == "open" and rtc["connectionState"] == "connected", rtc
    assert snap["micFrames"] > 100, "the microphone's track sent (almost) no RTP packets"
    turn = next(t for t in snap["turns"] if t["audioStarted"])
    # What the WAV says, as the edge transcribed it from the Opus track.
    assert "weather" in turn["user"].lower() and "london" in turn["user"].lower(), turn
    assert turn["assistant"].strip(), turn
    # The audio came on the track, not as events; the data channel said when it started and stopped.
    events = snap["events"]
    assert "response.output_audio.delta" not in events, events
    assert events.get("output_audio_buffer.started", 0) >= 1, events
    assert events.get("output_audio_buffer.stopped", 0) >= 1, events
    # The answer reached the browser and was played: energy in the decoded inbound audio, and at an
    # analyser on the remote track.
    assert rtc["bytesReceived"] > 10_000 and rtc["totalAudioEnergy"] > 0, rtc
    assert rtc["peakAudioLevel"] > 0.01 and rtc["remotePeakRms"] > 0.01, rtc
    # Served by the real region, not degraded; latencies measured in the page, in pipeline order.
    assert turn["region"] == "test-region", turn
    assert not turn["degraded"], turn
    lat = turn["latency"]
    assert 0 < lat["transcript_ms"] <= lat["first_audio_ms"], lat
    assert lat["first_text_ms"] is not None, lat

    # ... and the user sees all of it.
    card = page.locator(".turn").first
    assert "london" in (await card.locator(".user .text").inner_text()).lower()
    assert (await card.locator(".assistant .text").inner_text()).strip()
    assert await card.locator(".region").inner_text() == "region test-region"
    numbers = await card.locator(".numbers").inner_text()
    assert "transcript" in numbers and "first audio" in numbers and "ms" in numbers, numbers
    # Hanging up closes the peer connection.
    await page.click("#stop")
    closed = await page.evaluate("window.voicemesh.snapshot()")
    assert not closed["connected"] and closed["webrtc"]["connectionState"] == "closed", closed


async def test_transport_switch_defaults_to_webrtc_and_keeps_the_choice(
    page: Page, web_edge: RunningEdge
) -> None:
    await page.goto(f"{web_edge.http_url}/")
    assert await page.locator("#transport").input_value() == "webrtc"
    await page.select_option("#transport", "websocket")
    assert page.url.endswith("/?transport=websocket"), page.url
    await page.reload()
    assert await page.locator("#transport").input_value() == "websocket"
