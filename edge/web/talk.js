// The talk page: microphone -> the edge's Realtime endpoint -> transcript, reply text and audio,
// with each turn's serving region, degradation, queue position and latency breakdown.
// Two transports (transport.js picks one): WebRTC (webrtc.js, the default) and the WebSocket
// (ws-call.js). Both deliver the same Realtime events here; each plays the answer its own way.
//
// `window.voicemesh.snapshot()` returns the page's state as plain JSON (the browser test reads it).

import { askForKey, forgetKey, HttpError, takeKeyFromFragment } from "./auth.js";
import { mintClientSecret } from "./realtime.js";
import { routingNote } from "./routing.js";
import { transportSwitch } from "./transport.js";
import { Turns } from "./turns.js";
import { openWebRtcCall } from "./webrtc.js";
import { openWebSocketCall } from "./ws-call.js";

const $ = (sel) => document.querySelector(sel);
const ui = {
  status: $("#status"),
  start: $("#start"),
  stop: $("#stop"),
  level: $("#mic-level"),
  queue: $("#queue"),
  error: $("#error"),
  keyForm: $("#key-form"),
  transport: $("#transport"),
  remoteAudio: $("#remote-audio"),
};

let ctx = null; // one AudioContext: capture, playback and meters share its clock
let call = null; // the open WebRtcCall or WebSocketCall
let lastCall = null; // what the snapshot reports after a hang-up
const eventCounts = {};
const errors = [];
const turns = new Turns($("#turns"), $("#turn-tpl"));

function setStatus(state, text = state) {
  ui.status.dataset.state = state;
  ui.status.textContent = text;
}

function showError(message) {
  errors.push(message);
  ui.error.textContent = message;
  ui.error.hidden = false;
}

function showQueue(queue) {
  if (!queue) {
    ui.queue.hidden = true;
    return;
  }
  const wait = Number.isFinite(queue.wait) ? `, ~${queue.wait.toFixed(1)} s` : "";
  ui.queue.textContent = `waiting in queue: #${queue.position}${wait}`;
  ui.queue.hidden = false;
}

function audioContext() {
  if (ctx) return ctx;
  try {
    ctx = new AudioContext({ sampleRate: 24000, latencyHint: "interactive" });
  } catch {
    ctx = new AudioContext({ latencyHint: "interactive" }); // the worklet resamples instead
  }
  return ctx;
}

function playbackEnded() {
  turns.playbackEnded();
  if (call) setStatus("live", "listening");
}

/** One Realtime event from `from` (the call it came on: events can arrive before it is `call`). */
function onEvent(ev, from) {
  const now = performance.now();
  eventCounts[ev.type] = (eventCounts[ev.type] || 0) + 1;
  switch (ev.type) {
    case "session.created":
      // Ask for what this page relies on; an edge that already does it just echoes session.updated.
      from.send(sessionUpdate(from.kind));
      setStatus("live", "listening");
      break;
    case "input_audio_buffer.speech_started": {
      // Barge-in by simply talking: the edge cancels the region's turn; the WebSocket player
      // silences what it has queued (over WebRTC the edge stops the track: output_audio_buffer.cleared).
      const unplayed = from.bargeIn();
      if (unplayed !== null) turns.interrupted(unplayed);
      turns.speechStarted(now);
      setStatus("live", "hearing you");
      break;
    }
    case "input_audio_buffer.speech_stopped":
      turns.speechStopped(now);
      setStatus("live", "thinking");
      break;
    case "conversation.item.input_audio_transcription.delta":
      turns.userDelta(ev.delta || "");
      break;
    case "conversation.item.input_audio_transcription.completed":
      turns.userDone(ev.transcript || "", now);
      break;
    case "response.created":
      turns.responseCreated(ev.response || {}, now);
      break;
    case "response.output_audio_transcript.delta":
    case "response.output_text.delta":
      turns.assistantDelta(ev.response_id, ev.delta || "", now);
      showQueue(null);
      break;
    case "response.output_audio_transcript.done":
    case "response.output_text.done":
      turns.assistantDone(ev.response_id, ev.transcript ?? ev.text ?? null);
      break;
    case "response.output_audio.delta": // WebSocket only: over WebRTC the audio is on the track
      turns.audioDelta(ev.response_id, from.play(ev.delta || ""), now);
      showQueue(null);
      setStatus("live", "speaking");
      break;
    case "output_audio_buffer.started": // WebRTC: the answer's audio started on the track
      turns.audioDelta(ev.response_id, 0, now);
      showQueue(null);
      setStatus("live", "speaking");
      break;
    case "output_audio_buffer.stopped":
      playbackEnded();
      break;
    case "output_audio_buffer.cleared": // WebRTC barge-in: the edge cut the answer's audio
      turns.interrupted(null);
      break;
    case "response.done":
      turns.responseDone(ev.response || {}, now, from.playing);
      showQueue(null);
      if (!from.playing) setStatus("live", "listening");
      break;
    case "error": {
      const err = ev.error || {};
      showError(`${err.code || err.type || "error"}: ${err.message || "the edge reported an error"}`);
      break;
    }
    default:
      break;
  }
  // After the switch, so that response.created has already bound its response id to a turn.
  const note = routingNote(ev);
  if (note) {
    if ("queue" in note) showQueue(note.queue);
    turns.note(ev, note);
  }
}

/** What this page relies on; over WebRTC the audio formats are the track's (Opus), not the session's. */
function sessionUpdate(kind) {
  const pcm = { type: "audio/pcm", rate: 24000 };
  const input = { transcription: { model: "whisper-1" }, turn_detection: { type: "server_vad" } };
  const audio = kind === "websocket" ? { input: { format: pcm, ...input }, output: { format: pcm } } : { input };
  return { type: "session.update", session: { type: "realtime", audio } };
}

async function mintWithKey() {
  let key = await askForKey(ui.keyForm);
  for (;;) {
    try {
      return await mintClientSecret(key);
    } catch (err) {
      if (!(err instanceof HttpError) || (err.status !== 401 && err.status !== 403)) throw err;
      forgetKey(); // wrong key: ask again rather than fail
      showError(`the edge refused that key (${err.message}); enter it again`);
      key = await askForKey(ui.keyForm);
    }
  }
}

async function connect() {
  ui.start.disabled = true;
  ui.transport.disabled = true;
  ui.error.hidden = true;
  try {
    await audioContext().resume(); // inside the click: browsers start audio only on a gesture
    setStatus("connecting", "connecting");
    const secret = await mintWithKey(); // a new secret for each connection
    const handlers = {
      onEvent,
      onError: showError,
      onIdle: playbackEnded,
      onMicLevel: (rms) => (ui.level.value = rms),
      onClose: (reason) => {
        if (reason) showError(reason);
        hangUp();
      },
    };
    call =
      ui.transport.value === "websocket"
        ? await openWebSocketCall(secret, ctx, handlers)
        : await openWebRtcCall(secret, ctx, ui.remoteAudio, handlers);
    lastCall = call;
    ui.stop.disabled = false;
  } catch (err) {
    showError(err.message || String(err));
    hangUp();
  }
}

function hangUp() {
  if (call) call.close();
  call = null;
  ui.level.value = 0;
  showQueue(null);
  setStatus("idle");
  ui.start.disabled = false;
  ui.transport.disabled = false;
  ui.stop.disabled = true;
}

takeKeyFromFragment(); // at once: the key should not linger in the address bar or history
transportSwitch(ui.transport);
ui.start.addEventListener("click", connect);
ui.stop.addEventListener("click", hangUp);

window.voicemesh = {
  connect,
  hangUp,
  snapshot: () => ({
    status: ui.status.textContent,
    transport: ui.transport.value,
    connected: !!call && call.open,
    micFrames: 0,
    sampleRate: ctx ? ctx.sampleRate : null,
    player: null,
    ...(lastCall ? lastCall.snapshot() : {}),
    turns: turns.snapshot(),
    events: { ...eventCounts },
    errors: [...errors],
  }),
};
