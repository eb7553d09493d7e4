"""The talk page on its WebSocket transport (``?transport=websocket``) in a real Chromium whose
microphone is a speech WAV, against a real local deployment (WebRTC, the default: test_talk_webrtc.py;
the degraded turn runs on both).

The page mints a client secret with the API key, opens the edge's Realtime socket with it, streams
the fake microphone through its AudioWorklet, and plays the answer. ``window.voicemesh.snapshot()``
is the page's own state; the DOM checks make sure the user actually sees it.
"""

from __future__ import annotations

import pytest
from playwright.async_api import Page

from tests.fixtures.edge import RunningEdge
from tests.web.conftest import docs_screenshot
from tests.web.driving import played_peak, snapshot, talk


async def test_spoken_question_shows_transcript_plays_answer_and_names_region(
    page: Page, web_edge: RunningEdge
) -> None:
    snap = await talk(page, web_edge, "websocket")

    assert snap["errors"] == [], snap["errors"]
    assert snap["transport"] == "websocket"
    assert snap["events"].get("response.output_audio.delta", 0) > 0, snap["events"]
    assert snap["sampleRate"] == 24_000
    assert snap["micFrames"] > 100, "the worklet sent (almost) no microphone audio"
    turn = next(t for t in snap["turns"] if t["audioSamples"] > 0)
    # What the WAV says, as the edge transcribed it.
    assert "weather" in turn["user"].lower() and "london" in turn["user"].lower(), turn
    assert turn["assistant"].strip(), turn
    # The answer reached the page's audio output: samples scheduled and energy at the analyser.
    player = snap["player"]
    assert player["samplesScheduled"] >= turn["audioSamples"] > 24_000 * 0.3, player
    assert player["peakRms"] > 0.01, player
    # Served by the real region, not degraded.
    assert turn["region"] == "test-region", turn
    assert not turn["degraded"], turn
    # Latency breakdown measured in the page, in pipeline order.
    lat = turn["latency"]
    assert 0 < lat["transcript_ms"] <= lat["first_audio_ms"], lat
    # A clause's words are sent once its audio has been (edge/turns/heard.py): text follows audio.
    assert lat["first_text_ms"] is not None and lat["first_audio_ms"] <= lat["first_text_ms"], lat

    # ... and the user sees all of it.
    card = page.locator(".turn").first
    assert "london" in (await card.locator(".user .text").inner_text()).lower()
    assert await card.locator(".region").inner_text() == "region test-region"
    assert not await card.locator(".degraded").is_visible()
    numbers = await card.locator(".numbers").inner_text()
    assert "transcript" in numbers and "first audio" in numbers and "ms" in numbers, numbers
    if (path := docs_screenshot("talk.png")) is not None:
        await page.screenshot(path=str(path))


@pytest.mark.parametrize("transport", ["webrtc", "websocket"])
async def test_degraded_turn_is_marked_and_still_spoken(
    page: Page, lonely_web_edge: RunningEdge, transport: str
) -> None:
    snap = await talk(page, lonely_web_edge, transport)

    assert snap["transport"] == transport
    turn = next(t for t in snap["turns"] if t["audioStarted"])
    assert turn["degraded"], turn
    assert turn["reason"], "a degraded turn says why"
    assert turn["region"] is None, turn
    assert "no region can answer" in turn["assistant"].lower(), turn
    assert played_peak(snap) > 0.01, snap
    card = page.locator(".turn").first
    assert await card.locator(".degraded").is_visible()
    assert "edge voice" in await card.locator(".degraded").inner_text()


async def test_wrong_key_is_refused_with_a_reason(page: Page, web_edge: RunningEdge) -> None:
    await page.goto(f"{web_edge.http_url}/#key=not-the-key")
    await page.click("#start")
    await page.wait_for_selector("#key-form:not([hidden])", timeout=10_000)
    error = await page.locator("#error").inner_text()
    assert "refused" in error and "401" in error, error
    snap = await snapshot(page)
    assert not snap["connected"] and snap["micFrames"] == 0


async def test_barge_in_stops_all_scheduled_audio_at_once(page: Page, web_edge: RunningEdge) -> None:
    """The player alone, in the browser: 2 s of tone queued as 20 deltas, then ``stopAll()`` (what the
    page does on ``input_audio_buffer.speech_started``) silences the output within one meter tick."""
    await page.goto(f"{web_edge.http_url}/")
    result = await page.evaluate(
        """async () => {
          const { Player } = await import('/web/player.js');
          const ctx = new AudioContext({ sampleRate: 24000 });
          await ctx.resume();
          const player = new Player(ctx);
          for (let k = 0; k < 20; k++) {
            const pcm = new Int16Array(2400);
            const t0 = k * 2400;
            const w = (2 * Math.PI * 440) / 24000;
            for (let i = 0; i < pcm.length; i++) pcm[i] = 8000 * Math.sin(w * (t0 + i));
            player.enqueue(pcm);
          }
          await new Promise((r) => setTimeout(r, 400));
          const before = { playing: player.playing, peak: player.peakRms, level: player.level };
          const unplayed = player.stopAll();
          await new Promise((r) => setTimeout(r, 200));
          player.analyser.getFloatTimeDomainData(player.scratch);
          const after = Math.max(...player.scratch.map(Math.abs));
          return { before, unplayed, stopped: player.samplesStopped, playingAfter: player.playing, after };
        }"""
    )
    assert result["before"]["playing"] and result["before"]["peak"] > 0.1, result
    assert 1.0 < result["unplayed"] < 2.0, result  # most of the 2 s was never played
    assert result["stopped"] > 24_000, result
    assert not result["playingAfter"], result
    assert result["after"] < 1e-3, result  # silence at the output right after the barge-in
