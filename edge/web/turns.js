// The conversation as turns: one card per user utterance and the response to it, with where it
// was served and how long each stage took, measured from event arrival times in this page:
// end of speech -> transcript -> first text -> first audio.

const BAR_FULL_MS = 4000; // a turn this fast or slower fills the card's width

function fmtMs(ms) {
  return Number.isFinite(ms) ? `${Math.round(ms)} ms` : "–";
}

class Turn {
  constructor(el) {
    this.el = el;
    this.user = "";
    this.userFinal = false;
    this.assistant = "";
    this.region = null;
    this.attempt = 1;
    this.degraded = false;
    this.reason = "";
    this.failovers = [];
    this.queue = null;
    this.state = "listening";
    this.responseId = null;
    this.metadata = {}; // response.metadata of response.done, as the edge sent it
    this.audioSamples = 0;
    this.unplayedS = 0;
    this.t = {}; // performance.now() stamps: speechStarted, eos, transcript, firstText, firstAudio, done
  }

  latency() {
    const { eos, transcript, firstText, firstAudio } = this.t;
    const since = (x) => (eos !== undefined && x !== undefined ? x - eos : null);
    return { transcript_ms: since(transcript), first_text_ms: since(firstText), first_audio_ms: since(firstAudio) };
  }

  render() {
    const q = (s) => this.el.querySelector(s);
    this.el.dataset.state = this.state;
    this.el.classList.toggle("is-degraded", this.degraded);
    q(".user .text").textContent = this.user || (this.state === "listening" ? "listening…" : "");
    q(".assistant .text").textContent = this.assistant;
    const region = q(".region");
    region.textContent = this.region ? `region ${this.region}` : this.degraded ? "no region" : "region …";
    region.dataset.region = this.region || "";
    const deg = q(".degraded");
    deg.hidden = !this.degraded;
    deg.textContent = this.reason ? `edge voice · ${this.reason}` : "edge voice";
    const fo = q(".failover");
    fo.hidden = this.failovers.length === 0;
    fo.textContent = this.failovers.map((f) => `failover ${f.from}→${f.to}${f.reason ? ` (${f.reason})` : ""}`).join("; ");
    q(".state").textContent = this.queue ? `queued #${this.queue.position}` : this.state;
    const lat = this.latency();
    const seg = (a, b) => (a !== null && b !== null ? Math.max(0, b - a) : 0);
    const widths = {
      stt: lat.transcript_ms ?? 0,
      llm: seg(lat.transcript_ms, lat.first_text_ms),
      tts: seg(lat.first_text_ms, lat.first_audio_ms),
    };
    // The bar's full width is 4 s, or the whole turn when it took longer: segments stay in proportion.
    const full = Math.max(BAR_FULL_MS, widths.stt + widths.llm + widths.tts);
    for (const [k, ms] of Object.entries(widths)) q(`.bar .${k}`).style.width = `${(100 * ms) / full}%`;
    q(".numbers").textContent =
      lat.transcript_ms === null && lat.first_audio_ms === null
        ? ""
        : `end of speech → transcript ${fmtMs(lat.transcript_ms)} → first text ${fmtMs(lat.first_text_ms)}` +
          ` → first audio ${fmtMs(lat.first_audio_ms)}`;
  }

  snapshot() {
    return {
      user: this.user,
      assistant: this.assistant,
      region: this.region,
      attempt: this.attempt,
      degraded: this.degraded,
      reason: this.reason,
      failovers: this.failovers,
      queue: this.queue,
      state: this.state,
      audioSamples: this.audioSamples, // WebSocket only: over WebRTC the audio is on the track
      audioStarted: this.t.firstAudio !== undefined,
      metadata: this.metadata,
      latency: this.latency(),
    };
  }
}

export class Turns {
  constructor(list, template) {
    this.list = list;
    this.template = template;
    this.turns = [];
    this.byResponse = new Map();
  }

  get current() {
    return this.turns[this.turns.length - 1] || null;
  }

  add() {
    const el = this.template.content.firstElementChild.cloneNode(true);
    this.list.prepend(el); // newest on top
    const turn = new Turn(el);
    this.turns.push(turn);
    return turn;
  }

  // A speech_started that produced nothing (noise) leaves an empty turn: reuse it.
  fresh() {
    const cur = this.current;
    if (cur && !cur.user && !cur.responseId && cur.state === "listening") return cur;
    return this.add();
  }

  find(responseId) {
    return (responseId && this.byResponse.get(responseId)) || this.current || this.add();
  }

  update(turn) {
    turn.render();
  }

  speechStarted(now) {
    const turn = this.fresh();
    turn.t.speechStarted = now;
    this.update(turn);
  }

  speechStopped(now) {
    const turn = this.current || this.add();
    turn.t.eos = now;
    turn.state = "thinking";
    this.update(turn);
  }

  userDelta(delta) {
    const turn = this.current || this.add();
    if (!turn.userFinal) turn.user += delta;
    this.update(turn);
  }

  userDone(transcript, now) {
    const turn = this.current || this.add();
    turn.user = transcript.trim();
    turn.userFinal = true;
    turn.t.transcript ??= now;
    this.update(turn);
  }

  responseCreated(response, now) {
    let turn = this.current;
    if (!turn || turn.responseId) turn = this.add();
    turn.responseId = response.id || `r${this.turns.length}`;
    this.byResponse.set(turn.responseId, turn);
    turn.state = "answering";
    turn.t.created = now;
    this.update(turn);
  }

  assistantDelta(responseId, delta, now) {
    const turn = this.find(responseId);
    turn.assistant += delta;
    turn.t.firstText ??= now;
    turn.queue = null;
    this.update(turn);
  }

  assistantDone(responseId, text) {
    const turn = this.find(responseId);
    if (typeof text === "string" && text.length >= turn.assistant.length) turn.assistant = text;
    this.update(turn);
  }

  audioDelta(responseId, samples, now) {
    const turn = this.find(responseId);
    turn.audioSamples += samples;
    turn.t.firstAudio ??= now;
    turn.queue = null;
    this.update(turn);
  }

  /** `stillPlaying`: whether its audio is still coming out of the speakers ("spoken" until then). */
  responseDone(response, now, stillPlaying) {
    const turn = this.find(response.id);
    turn.t.done = now;
    const status = response.status || "completed";
    turn.metadata = response.metadata || {};
    if (turn.state !== "interrupted") {
      turn.state = status !== "completed" ? status : stillPlaying ? "spoken" : "done";
    }
    this.update(turn);
  }

  /** Barge-in cut the playing answer; `unplayedS` seconds of it were never heard. */
  interrupted(unplayedS) {
    const turn = [...this.turns].reverse().find((t) => t.responseId) || this.current;
    if (!turn) return;
    turn.state = "interrupted";
    turn.unplayedS = unplayedS;
    this.update(turn);
  }

  playbackEnded() {
    const turn = [...this.turns].reverse().find((t) => t.responseId);
    if (turn && turn.state === "spoken") {
      turn.state = "done";
      this.update(turn);
    }
  }

  /** Apply a routing note (see routing.js) to the turn the event belongs to. */
  note(ev, note) {
    const rid = (ev.response && ev.response.id) || ev.response_id;
    const turn = this.find(rid);
    if (note.region) turn.region = note.region;
    if (note.attempt) turn.attempt = note.attempt;
    if (note.degraded) {
      turn.degraded = true;
      if (note.reason) turn.reason = note.reason;
    }
    if ("queue" in note) turn.queue = note.queue;
    if (note.failover) {
      const f = note.failover;
      if (!turn.failovers.some((x) => x.from === f.from && x.to === f.to)) turn.failovers.push(f);
    }
    this.update(turn);
  }

  snapshot() {
    return this.turns.map((t) => t.snapshot());
  }
}
