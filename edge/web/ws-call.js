// The WebSocket transport: the microphone through the AudioWorklet (20 ms PCM16 chunks sent as
// `input_audio_buffer.append`), the answer's `response.output_audio.delta`s played by Player.
// Kept for clients that want PCM over the socket (`?transport=websocket`); WebRTC is the default.

import { base64ToInt16, int16ToBase64, Player } from "./player.js";
import { eventReader, openRealtime } from "./realtime.js";

const loaded = new WeakSet(); // contexts that have the worklet module (registering twice throws)

class WebSocketCall {
  constructor(ws, ctx, { onEvent, onClose, onError, onIdle }) {
    this.kind = "websocket";
    this.ws = ws;
    this.ctx = ctx;
    this.player = new Player(ctx);
    this.player.onIdle = onIdle;
    this.micFrames = 0;
    this.mic = null;
    this.closed = false;
    const read = eventReader((ev) => onEvent(ev, this), onError);
    ws.addEventListener("message", (msg) => read(msg.data));
    ws.addEventListener("close", (ev) => {
      if (this.closed) return;
      this.close();
      onClose(ev.code === 1000 ? null : `connection closed (${ev.code} ${ev.reason || "no reason"})`);
    });
  }

  async startMic(onMicLevel) {
    if (!loaded.has(this.ctx)) {
      await this.ctx.audioWorklet.addModule("/web/audio-worklet.js");
      loaded.add(this.ctx);
    }
    const stream = await navigator.mediaDevices.getUserMedia({
      // Echo cancellation keeps the answer coming out of the speakers from barging in on itself;
      // noise suppression and gain control are left to the edge's VAD (they smear synthetic and
      // quiet speech and cost Whisper words).
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: false, autoGainControl: false },
    });
    const source = this.ctx.createMediaStreamSource(stream);
    const node = new AudioWorkletNode(this.ctx, "pcm-capture");
    node.port.onmessage = ({ data }) => {
      this.micFrames += 1;
      onMicLevel(data.rms);
      this.send({ type: "input_audio_buffer.append", audio: int16ToBase64(new Int16Array(data.pcm)) });
    };
    source.connect(node);
    node.connect(this.ctx.destination); // the worklet outputs nothing; connected so the graph pulls it
    this.mic = { stream, node, source };
  }

  get open() {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  get playing() {
    return this.player.playing;
  }

  send(event) {
    if (this.open) this.ws.send(JSON.stringify(event));
  }

  /** One answer delta into the player; returns its samples. */
  play(b64) {
    const pcm = base64ToInt16(b64);
    this.player.enqueue(pcm);
    return pcm.length;
  }

  /** Barge-in: silence what is queued here at once; the seconds never played (null: nothing was). */
  bargeIn() {
    return this.player.playing ? this.player.stopAll() : null;
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    if (this.mic) {
      this.mic.stream.getTracks().forEach((t) => t.stop());
      this.mic.source.disconnect();
      this.mic.node.disconnect();
    }
    this.player.stopAll();
    this.player.analyser.disconnect();
    if (this.ws.readyState <= WebSocket.OPEN) this.ws.close(1000, "hang up");
  }

  snapshot() {
    const p = this.player;
    return {
      micFrames: this.micFrames,
      player: {
        samplesScheduled: p.samplesScheduled,
        samplesStopped: p.samplesStopped,
        peakRms: p.peakRms,
        playing: p.playing,
      },
    };
  }
}

/** Open the Realtime socket with a client secret and start the microphone into it. */
export async function openWebSocketCall(secret, ctx, handlers) {
  const call = new WebSocketCall(await openRealtime(secret), ctx, handlers);
  try {
    await call.startMic(handlers.onMicLevel);
  } catch (err) {
    call.close();
    throw err;
  }
  return call;
}
