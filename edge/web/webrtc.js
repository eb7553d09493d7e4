// The WebRTC transport, wire-compatible with OpenAI's and set up the way its browser quickstart does:
// the microphone's track and a data channel named `oai-events` on one RTCPeerConnection, the SDP
// offer POSTed to /v1/realtime/calls with the client secret as a Bearer token, the SDP answer back.
// Audio travels as Opus on the track both ways (the browser's echo canceller, noise suppressor and
// gain control run on the microphone); every other Realtime event is JSON on the data channel.
// The answer's track plays through an <audio> element; a LevelMeter and getStats() show it arrived.

import { httpError } from "./auth.js";
import { LevelMeter } from "./meter.js";
import { eventReader } from "./realtime.js";

const CALLS_URL = "/v1/realtime/calls";
const GATHER_MS = 3000; // host candidates on a LAN take milliseconds; never wait forever for STUN
const OPEN_MS = 20000;
const STATS_MS = 500;

function within(ms, what, promise) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(what)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// The edge answers the offer once and takes no trickled candidates afterwards, so the offer
// carries the browser's candidates: wait for gathering to finish (or GATHER_MS, then send what we have).
function gathered(pc) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  const done = new Promise((resolve) => {
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc.iceGatheringState === "complete") resolve();
    });
  });
  return within(GATHER_MS, "gathering", done).catch(() => {});
}

class WebRtcCall {
  constructor(ctx, audioEl, { onEvent, onClose, onError, onMicLevel }) {
    this.kind = "webrtc";
    this.ctx = ctx;
    this.audioEl = audioEl;
    this.pc = new RTCPeerConnection();
    this.dc = this.pc.createDataChannel("oai-events");
    this.playing = false; // between output_audio_buffer.started and .stopped / .cleared
    this.closed = false;
    this.onClose = onClose;
    this.onMicLevel = onMicLevel;
    this.mic = null;
    this.micMeter = null;
    this.remoteMeter = null;
    this.stats = { packetsSent: 0, bytesReceived: 0, packetsReceived: 0, totalAudioEnergy: 0, peakAudioLevel: 0 };
    const read = eventReader((ev) => {
      if (ev.type === "output_audio_buffer.started") this.playing = true;
      if (ev.type === "output_audio_buffer.stopped" || ev.type === "output_audio_buffer.cleared") {
        this.playing = false;
      }
      onEvent(ev, this);
    }, onError);
    this.dc.addEventListener("message", (msg) => read(msg.data));
    this.dc.addEventListener("close", () => this.ended("the edge closed the data channel"));
    this.pc.addEventListener("connectionstatechange", () => {
      if (this.pc.connectionState === "failed") this.ended("the WebRTC connection failed");
    });
    this.pc.addEventListener("track", (e) => {
      const stream = e.streams[0] || new MediaStream([e.track]);
      this.audioEl.srcObject = stream; // Chromium only decodes a remote track that a media element plays
      this.remoteMeter = new LevelMeter(ctx, stream);
    });
    this.statsTimer = setInterval(() => this.readStats().catch(() => {}), STATS_MS);
  }

  async start(secret) {
    this.mic = await navigator.mediaDevices.getUserMedia({
      // The browser's own processing: the echo canceller keeps the answer from the speakers from
      // barging in on itself; WebRTC's noise suppressor and gain control are tuned for this path.
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
    const track = this.mic.getAudioTracks()[0];
    this.pc.addTrack(track, this.mic);
    this.micMeter = new LevelMeter(this.ctx, this.mic);
    this.micTimer = setInterval(() => this.onMicLevel(this.micMeter.level), 100);
    await this.pc.setLocalDescription(await this.pc.createOffer());
    await gathered(this.pc);
    const res = await fetch(CALLS_URL, {
      method: "POST",
      body: this.pc.localDescription.sdp,
      headers: { Authorization: `Bearer ${secret.value}`, "Content-Type": "application/sdp" },
    });
    if (!res.ok) throw await httpError(res);
    await this.pc.setRemoteDescription({ type: "answer", sdp: await res.text() });
    if (this.dc.readyState !== "open") {
      const opened = new Promise((resolve) => this.dc.addEventListener("open", resolve, { once: true }));
      await within(OPEN_MS, `the WebRTC connection did not open (ICE ${this.pc.iceConnectionState})`, opened);
    }
  }

  get open() {
    return !this.closed && this.dc.readyState === "open";
  }

  send(event) {
    if (this.open) this.dc.send(JSON.stringify(event));
  }

  /** Barge-in needs nothing here: the edge stops the track and says `output_audio_buffer.cleared`. */
  bargeIn() {
    return null;
  }

  async readStats() {
    const reports = await this.pc.getStats();
    reports.forEach((r) => {
      if (r.kind !== "audio") return;
      if (r.type === "outbound-rtp") this.stats.packetsSent = r.packetsSent || 0;
      if (r.type === "inbound-rtp") {
        this.stats.bytesReceived = r.bytesReceived || 0;
        this.stats.packetsReceived = r.packetsReceived || 0;
        this.stats.totalAudioEnergy = r.totalAudioEnergy || 0;
        this.stats.peakAudioLevel = Math.max(this.stats.peakAudioLevel, r.audioLevel || 0);
      }
    });
  }

  ended(reason) {
    if (this.closed) return;
    this.close();
    this.onClose(reason);
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    this.playing = false;
    clearInterval(this.statsTimer);
    clearInterval(this.micTimer);
    if (this.mic) this.mic.getTracks().forEach((t) => t.stop());
    if (this.micMeter) this.micMeter.stop();
    if (this.remoteMeter) this.remoteMeter.stop();
    this.audioEl.srcObject = null;
    this.dc.close();
    this.pc.close();
  }

  snapshot() {
    return {
      micFrames: this.stats.packetsSent,
      webrtc: {
        ...this.stats,
        connectionState: this.pc.connectionState,
        channel: this.dc.readyState,
        remotePeakRms: this.remoteMeter ? this.remoteMeter.peakRms : 0,
        playing: this.playing,
      },
    };
  }
}

/** Open a WebRTC call to the edge with a client secret; resolves once the data channel is open. */
export async function openWebRtcCall(secret, ctx, audioEl, handlers) {
  const call = new WebRtcCall(ctx, audioEl, handlers);
  try {
    await call.start(secret);
  } catch (err) {
    call.close();
    throw err;
  }
  return call;
}
