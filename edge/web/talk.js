// The talk page: microphone -> edge Realtime socket -> transcript, reply text and gapless audio,
// with each turn's serving region, degradation, queue position and latency breakdown.
//
// `window.voicemesh.snapshot()` returns the page's state as plain JSON (the browser test reads it).

import { askForKey, forgetKey, HttpError, takeKeyFromFragment } from "./auth.js";
import { base64ToInt16, int16ToBase64, Player } from "./player.js";
import { mintClientSecret, openRealtime } from "./realtime.js";
import { routingNote } from "./routing.js";
import { Turns } from "./turns.js";

const $ = (sel) => document.querySelector(sel);
const ui = {
  status: $("#status"),
  start: $("#start"),
  stop: $("#stop"),
  level: $("#mic-level"),
  queue: $("#queue"),
  error: $("#error"),
  keyForm: $("#key-form"),
};

let ctx = null; // one AudioContext: capture and playback share its clock
let player = null;
let ws = null;
let mic = null; // { stream, node }
let micFrames = 0;
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

function send(event) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(event));
}

async function audioContext() {
  if (ctx) return ctx;
  try {
    ctx = new AudioContext({ sampleRate: 24000, latencyHint: "interactive" });
  } catch {
    ctx = new AudioContext({ latencyHint: "interactive" }); // the worklet resamples instead
  }
  await ctx.audioWorklet.addModule("/web/audio-worklet.js");
  player = new Player(ctx);
  player.onIdle = () => {
    turns.playbackEnded();
    if (ws) setStatus("live", "listening");
  };
  return ctx;
}

async function startMic() {
  const stream = await navigator.mediaDevices.getUserMedia({
    // Echo cancellation keeps the answer coming out of the speakers from barging in on itself;
    // noise suppression and gain control are left to the edge's VAD (they smear synthetic and
    // quiet speech and cost Whisper words).
    audio: { channelCount: 1, echoCancellation: true, noiseSuppression: false, autoGainControl: false },
  });
  const source = ctx.createMediaStreamSource(stream);
  const node = new AudioWorkletNode(ctx, "pcm-capture");
  node.port.onmessage = ({ data }) => {
    micFrames += 1;
    ui.level.value = data.rms;
    send({ type: "input_audio_buffer.append", audio: int16ToBase64(new Int16Array(data.pcm)) });
  };
  source.connect(node);
  // The worklet outputs nothing; it is connected only so the graph pulls it.
  node.connect(ctx.destination);
  mic = { stream, node, source };
}

function stopMic() {
  if (!mic) return;
  mic.stream.getTracks().forEach((t) => t.stop());
  mic.source.disconnect();
  mic.node.disconnect();
  mic = null;
  ui.level.value = 0;
}

function onEvent(ev) {
  const now = performance.now();
  eventCounts[ev.type] = (eventCounts[ev.type] || 0) + 1;
  switch (ev.type) {
    case "session.created":
      // Ask for what this page relies on; an edge that already does it just echoes session.updated.
      send({
        type: "session.update",
        session: {
          type: "realtime",
          audio: {
            input: {
              format: { type: "audio/pcm", rate: 24000 },
              transcription: { model: "whisper-1" },
              turn_detection: { type: "server_vad" },
            },
            output: { format: { type: "audio/pcm", rate: 24000 } },
          },
        },
      });
      setStatus("live", "listening");
      break;
    case "input_audio_buffer.speech_started":
      // Barge-in by simply talking: the edge cancels the region's turn; we silence what is queued.
      if (player.playing) turns.interrupted(player.stopAll());
      turns.speechStarted(now);
      setStatus("live", "hearing you");
      break;
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
    case "response.output_audio.delta": {
      const pcm = base64ToInt16(ev.delta || "");
      player.enqueue(pcm);
      turns.audioDelta(ev.response_id, pcm.length, now);
      showQueue(null);
      setStatus("live", "speaking");
      break;
    }
    case "response.done":
      turns.responseDone(ev.response || {}, now, player.playing);
      showQueue(null);
      if (!player.playing) setStatus("live", "listening");
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

async function connect() {
  ui.start.disabled = true;
  ui.error.hidden = true;
  try {
    await audioContext();
    await ctx.resume();
    setStatus("connecting", "connecting");
    let key = await askForKey(ui.keyForm);
    let secret;
    for (;;) {
      try {
        secret = await mintClientSecret(key);
        break;
      } catch (err) {
        if (!(err instanceof HttpError) || (err.status !== 401 && err.status !== 403)) throw err;
        forgetKey(); // wrong key: ask again rather than fail
        showError(`the edge refused that key (${err.message}); enter it again`);
        key = await askForKey(ui.keyForm);
      }
    }
    ws = await openRealtime(secret);
    ws.addEventListener("message", (msg) => {
      try {
        onEvent(JSON.parse(msg.data));
      } catch (err) {
        showError(`bad event from the edge: ${err.message}`);
      }
    });
    ws.addEventListener("close", (ev) => {
      if (ev.code !== 1000) showError(`connection closed (${ev.code} ${ev.reason || "no reason"})`);
      hangUp();
    });
    await startMic();
    ui.stop.disabled = false;
  } catch (err) {
    showError(err.message || String(err));
    hangUp();
  }
}

function hangUp() {
  stopMic();
  if (player) player.stopAll();
  if (ws && ws.readyState <= WebSocket.OPEN) ws.close(1000, "hang up");
  ws = null;
  showQueue(null);
  setStatus("idle");
  ui.start.disabled = false;
  ui.stop.disabled = true;
}

takeKeyFromFragment(); // at once: the key should not linger in the address bar or history
ui.start.addEventListener("click", connect);
ui.stop.addEventListener("click", hangUp);

window.voicemesh = {
  connect,
  hangUp,
  snapshot: () => ({
    status: ui.status.textContent,
    connected: !!ws && ws.readyState === WebSocket.OPEN,
    micFrames,
    sampleRate: ctx ? ctx.sampleRate : null,
    player: player
      ? {
          samplesScheduled: player.samplesScheduled,
          samplesStopped: player.samplesStopped,
          peakRms: player.peakRms,
          playing: player.playing,
        }
      : null,
    turns: turns.snapshot(),
    events: { ...eventCounts },
    errors: [...errors],
  }),
};
