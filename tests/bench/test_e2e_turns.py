"""The per-turn rules of ``voicemesh bench e2e`` (``e2e_turns``) and mid-answer silence
(``silences``), the same for voicemesh and Pipecat."""

from __future__ import annotations

import math

from voicemesh.bench.e2e_caller import Speaker, TurnLog
from voicemesh.bench.e2e_turns import answer_silences, backchannel_stopped, cut, playback_end, ttfa
from voicemesh.bench.silences import Silences, mid_answer_silences


def test_silences_are_gaps_in_playback_not_in_arrival() -> None:
    # Chunks arriving in a burst play back to back: no silence, however they arrived.
    assert mid_answer_silences([(0.0, 1.0), (0.1, 1.0), (0.2, 1.0)]) == Silences(0.0, 0.0, 0)
    # The second chunk arrives 0.5 s after the first ended; the third 0.1 s after (under the floor).
    got = mid_answer_silences([(0.0, 1.0), (1.5, 1.0), (2.6, 1.0)])
    assert (got.count, got.total_s, got.longest_s) == (1, 0.5, 0.5)
    got = mid_answer_silences([(0.0, 0.5), (1.0, 0.5), (3.0, 0.5)], floor_s=0.15)
    assert got.count == 2 and math.isclose(got.total_s, 2.0) and math.isclose(got.longest_s, 1.5)
    assert mid_answer_silences([]) == Silences(0.0, 0.0, 0)
    assert mid_answer_silences([(5.0, 1.0)]) == Silences(0.0, 0.0, 0)  # time to first audio is not silence


def test_a_paused_sentence_is_cut_by_early_audio_or_a_second_answer() -> None:
    one = [[[6.0, 2.0], [6.5, 2.0]]]
    assert cut(True, 5.0, one, None) is False
    assert cut(True, 5.0, [[[4.9, 1.0]]], None) is True  # audio before the sentence ended
    assert cut(True, 5.0, [[[5.5, 1.0]], [[6.5, 1.0]]], None) is True  # two answers to it
    # An answer after the backchannel began answers the backchannel: not a second answer to the sentence.
    assert cut(True, 5.0, [[[5.5, 3.0]], [[9.0, 1.0]]], 7.0) is False
    assert cut(False, 5.0, [[[4.0, 1.0]]], None) is None  # no pause: not counted


def test_ttfa_is_from_the_sentences_end_and_none_when_cut() -> None:
    assert ttfa(5.0, [[[6.25, 1.0]]], False) == 1.25
    assert ttfa(5.0, [[[4.0, 1.0]]], True) is None
    assert ttfa(5.0, [], None) is None


def test_a_backchannel_stops_an_answer_only_while_it_plays() -> None:
    answer = [[[6.0, 1.0], [6.2, 2.0]]]  # plays 6.0 -> 9.0
    assert playback_end(answer[0]) == 9.0
    assert backchannel_stopped(7.0, answer, [7.4]) is True
    assert backchannel_stopped(7.0, answer, []) is False
    assert backchannel_stopped(7.0, answer, [5.5]) is False  # a stop before the backchannel (the pause)
    assert backchannel_stopped(7.0, answer, [9.5]) is False  # the caller had heard it all
    assert backchannel_stopped(9.5, answer, [9.8]) is None  # no answer playing: not counted
    assert backchannel_stopped(None, answer, [7.4]) is None


def test_a_backchannel_in_a_slow_clauses_silence_still_stops_the_answer() -> None:
    # The first clause plays 6.0 -> 7.0; the next is late; "mm-hm" at 7.2, the system cancels at
    # 7.3 (its response ends there): the caller never hears the rest. As measured on voicemesh
    # server_vad under load.
    answer = [[[6.0, 1.0]]]
    assert backchannel_stopped(7.2, answer, [7.3], [7.3]) is True
    # The system had finished the answer at 6.5 and played it out by 7.0: nothing left to stop.
    assert backchannel_stopped(7.2, answer, [7.3], [6.5]) is None


def test_silences_per_answer_to_the_sentence() -> None:
    answers = [[[6.0, 1.0], [7.5, 1.0]], [[12.0, 1.0], [14.0, 1.0]]]
    [only] = answer_silences(answers, backchannel_s=10.0)  # the second answers the backchannel
    assert only == Silences(0.5, 0.5, 1)
    assert len(answer_silences(answers, None)) == 2


def test_the_speaker_says_the_backchannel_a_second_into_the_answer() -> None:
    log = TurnLog(t0=0.0)
    clock = [0.0]
    log.now = lambda: clock[0]  # type: ignore[method-assign]  # a turn clock the test moves
    speaker = Speaker(log, b"\1" * 8, speech_end_byte=6, backchannel=b"\2" * 4, step=4)
    assert speaker.next() == b"\1" * 4 and log.sentence_end_s is None
    clock[0] = 0.1
    assert speaker.next() == b"\1" * 4 and log.sentence_end_s == 0.1
    clock[0] = 0.5
    assert speaker.next() == bytes(4)  # silence: no answer yet
    log.audio("r1", 3.0)
    clock[0] = 1.4
    assert speaker.next() == bytes(4) and log.backchannel_s is None  # 0.9 s into the answer
    clock[0] = 1.5
    assert speaker.next() == b"\2" * 4 and log.backchannel_s == 1.5
    assert not speaker.settled()
    log.audio("r1", 1.0)
    log.audio("r2", 1.0)
    assert [len(a) for a in log.answers] == [2, 1]  # a new response is a new answer
    log.answering = True
    clock[0] = 2.0
    log.stop()  # abandoned while being produced: the current answer ends there
    assert log.answer_ends_s == [None, 2.0] and not log.answering
    clock[0] = 5.0
    assert speaker.next() == bytes(4) and speaker.settled()
