"""Custom voices in a region (``wire/voices.py``, ``region/voice_styles.py``): a blend is the
weighted sum of the region's own Kokoro styles (the real ``voices.npz`` of the cpu profile), an
uploaded style is used as sent, each is computed once per definition; a speak-only turn carrying a
definition is spoken with it, and a definition the region cannot speak is refused with an error.
The TTS is a stand-in in the turn tests (the pipeline's handling is under test, not Kokoro); the
live failover with Kokoro is ``tests/edge/test_custom_voices_live.py``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from region.cancel import CancelToken
from region.settings import TtsSettings
from region.testing import ToneTts, run_frames, standin_node
from region.tts import Synthesizer
from region.voice_styles import StyleCache, blend_styles
from tests.region.helpers import start
from wire.errors import BadEvent
from wire.turn import TurnDone, TurnError
from wire.voices import STYLE_SHAPE, CustomVoice, check_blend, decode_style, encode_style, voice_digest


@pytest.fixture
def kokoro_styles(models: dict[str, Path]) -> dict[str, np.ndarray]:
    with np.load(models["kokoro-int8"] / "voices.npz") as npz:
        return {name: np.asarray(npz[name], dtype=np.float32) for name in npz.files}


def test_a_blend_is_the_weighted_sum_of_the_region_styles_computed_once(
    kokoro_styles: dict[str, np.ndarray],
) -> None:
    alpha, kumo = kokoro_styles["jf_alpha"], kokoro_styles["jm_kumo"]
    assert alpha.shape == STYLE_SHAPE and not np.allclose(alpha, kumo)
    blend = check_blend({"jf_alpha": 7.0, "jm_kumo": 3.0})  # weights scaled to sum to 1
    assert blend == pytest.approx({"jf_alpha": 0.7, "jm_kumo": 0.3})
    cache = StyleCache()
    voice = CustomVoice(id="voice_narrator", blend=blend)

    style = cache.style(voice, kokoro_styles.__getitem__)

    assert style.dtype == np.float32 and style.shape == STYLE_SHAPE
    np.testing.assert_allclose(style, 0.7 * alpha + 0.3 * kumo, rtol=1e-5, atol=1e-6)
    assert not np.allclose(style, alpha) and not np.allclose(style, kumo)
    # Another turn (or another voice id defined alike) reuses it; another blend is computed.
    assert cache.style(CustomVoice(id="voice_other", blend=blend), kokoro_styles.__getitem__) is style
    assert cache.computed == 1
    np.testing.assert_allclose(blend_styles({"jf_alpha": 1.0}, kokoro_styles.__getitem__), alpha)
    cache.style(
        CustomVoice(id="v3", blend=check_blend({"jf_alpha": 1, "jf_nezumi": 1})), kokoro_styles.__getitem__
    )
    assert cache.computed == 2


def test_a_blend_is_the_weighted_sum_on_any_styles() -> None:
    """The same on made-up styles (the fast tier has no model files)."""
    rng = np.random.default_rng(16)
    styles = {n: rng.standard_normal(STYLE_SHAPE).astype(np.float32) for n in ("a", "b", "c")}
    blend = check_blend({"a": 1, "b": 2, "c": 1})
    style = StyleCache().style(CustomVoice(id="v", blend=blend), styles.__getitem__)
    np.testing.assert_allclose(style, 0.25 * styles["a"] + 0.5 * styles["b"] + 0.25 * styles["c"], atol=1e-6)


def test_an_uploaded_style_is_used_as_sent_and_bad_ones_are_refused(
    kokoro_styles: dict[str, np.ndarray],
) -> None:
    mine = (kokoro_styles["jf_nezumi"] * 0.5 + 0.01).astype(np.float32)
    voice = CustomVoice(id="voice_up", style=encode_style(mine))
    np.testing.assert_array_equal(StyleCache().style(voice, kokoro_styles.__getitem__), mine)
    assert voice_digest(voice) != voice_digest(CustomVoice(id="voice_up", style=encode_style(mine + 1)))
    for bad in ("not base64!", encode_style(mine)[:-8], encode_style(np.full(STYLE_SHAPE, np.nan))):
        with pytest.raises(BadEvent):
            decode_style(bad)


async def test_a_speak_only_turn_with_a_definition_is_spoken_with_it() -> None:
    tts = ToneTts(voices=("tone", "hum"))
    voice = CustomVoice(id="voice_mix", blend=check_blend({"tone": 0.6, "hum": 0.4}))
    sent = await run_frames(
        standin_node(tts=tts), [start("t", speak_text="One. Two.", custom_voice=voice)], until=TurnDone
    )
    done = next(m for m in sent if isinstance(m, TurnDone))
    assert done.status == "completed", done
    assert tts.spoken_with == [voice, voice]  # every clause, with the whole definition


@pytest.mark.parametrize(
    ("voice", "code"),
    [
        (CustomVoice(id="v", blend={"tone": 0.5, "af_nobody": 0.5}), "unknown_voice"),
        (CustomVoice(id="v"), "invalid_event"),  # neither blend nor style
        (CustomVoice(id="v", blend={"tone": 1.0}, style="AAAA"), "invalid_event"),  # both
        (CustomVoice(id="v", blend={"tone": -1.0}), "invalid_event"),
    ],
)
async def test_a_definition_the_region_cannot_speak_is_refused(voice: CustomVoice, code: str) -> None:
    tts = ToneTts(voices=("tone", "hum"))
    sent = await run_frames(
        standin_node(tts=tts), [start("t", speak_text="Hi.", custom_voice=voice)], until=TurnError
    )
    (error,) = [m for m in sent if isinstance(m, TurnError)]
    assert error.code == code, error
    assert tts.spoken == []


async def test_kokoro_speaks_a_blend_with_the_weighted_style(models: dict[str, Path]) -> None:
    """The real synthesizer: a blend of one voice at weight 1 sounds exactly like that voice by
    name (the same style reaches the model), and an even blend of two sounds like neither."""
    kokoro = models["kokoro-int8"]
    tts = Synthesizer(TtsSettings(model=str(kokoro / "kokoro.onnx"), voices=str(kokoro / "voices.npz")))
    await tts.load()
    text = "Good morning."
    alpha = await tts.synthesize(text, "jf_alpha", CancelToken())
    kumo = await tts.synthesize(text, "jm_kumo", CancelToken())
    as_blend = await tts.synthesize(text, CustomVoice(id="v1", blend={"jf_alpha": 1.0}), CancelToken())
    mixed = await tts.synthesize(
        text, CustomVoice(id="v2", blend={"jf_alpha": 0.5, "jm_kumo": 0.5}), CancelToken()
    )
    np.testing.assert_allclose(as_blend, alpha, atol=1e-4)
    assert float(np.sqrt(np.mean(mixed**2))) > 0.01  # speech, not silence
    for other in (alpha, kumo):
        n = min(len(mixed), len(other))
        assert len(mixed) != len(other) or not np.allclose(mixed[:n], other[:n], atol=1e-3)
    assert tts.styles.computed == 2
