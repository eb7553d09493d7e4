// Gapless playback of streamed PCM16 24 kHz deltas.
//
// Each delta becomes one AudioBufferSourceNode, scheduled to start exactly where the previous one
// ends on the AudioContext clock, so chunk boundaries never click or gap. Barge-in stops every
// scheduled source at once. All output passes an AnalyserNode: `peakRms` proves sound really
// reached the page's output (the end-to-end test reads it).

const RATE = 24000;
const LEAD_S = 0.05; // first chunk after silence starts this far ahead: absorbs network jitter

export function base64ToInt16(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length & ~1);
  for (let i = 0; i < bytes.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Int16Array(bytes.buffer);
}

export function int16ToBase64(pcm) {
  const bytes = new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}

export class Player {
  constructor(ctx) {
    this.ctx = ctx;
    this.analyser = ctx.createAnalyser();
    this.analyser.fftSize = 1024;
    this.analyser.connect(ctx.destination);
    this.sources = new Set();
    this.nextTime = 0;
    this.samplesScheduled = 0;
    this.samplesStopped = 0;
    this.peakRms = 0;
    this.meterTimer = null;
    this.onIdle = null; // called when the last scheduled source has finished playing
    this.scratch = new Float32Array(this.analyser.fftSize);
  }

  get playing() {
    return this.sources.size > 0;
  }

  /** Queue one delta of PCM16 at 24 kHz; returns the context time at which it starts. */
  enqueue(pcm) {
    if (pcm.length === 0) return this.nextTime;
    const buf = this.ctx.createBuffer(1, pcm.length, RATE);
    const ch = buf.getChannelData(0);
    for (let i = 0; i < pcm.length; i++) ch[i] = pcm[i] / 32768;
    const src = this.ctx.createBufferSource();
    src.buffer = buf;
    src.connect(this.analyser);
    const start = Math.max(this.nextTime, this.ctx.currentTime + LEAD_S);
    src.start(start);
    this.nextTime = start + buf.duration;
    this.sources.add(src);
    this.samplesScheduled += pcm.length;
    src.onended = () => {
      this.sources.delete(src);
      if (this.sources.size === 0) {
        this.stopMeter();
        if (this.onIdle) this.onIdle();
      }
    };
    this.startMeter();
    return start;
  }

  /** Barge-in: silence everything scheduled, now. Returns the seconds of audio never played. */
  stopAll() {
    const unplayed = Math.max(0, this.nextTime - this.ctx.currentTime);
    for (const src of this.sources) {
      src.onended = null;
      try {
        src.stop();
      } catch {
        /* never started: nothing to stop */
      }
      src.disconnect();
    }
    const had = this.sources.size > 0;
    this.sources.clear();
    this.nextTime = 0;
    this.stopMeter();
    if (had) this.samplesStopped += Math.round(unplayed * RATE);
    return had ? unplayed : 0;
  }

  // The meter runs only while something plays, to keep an idle page idle.
  startMeter() {
    if (this.meterTimer !== null) return;
    this.meterTimer = setInterval(() => {
      this.analyser.getFloatTimeDomainData(this.scratch);
      let sum = 0;
      for (let i = 0; i < this.scratch.length; i++) sum += this.scratch[i] * this.scratch[i];
      const rms = Math.sqrt(sum / this.scratch.length);
      if (rms > this.peakRms) this.peakRms = rms;
      this.level = rms;
    }, 50);
  }

  stopMeter() {
    if (this.meterTimer === null) return;
    clearInterval(this.meterTimer);
    this.meterTimer = null;
    this.level = 0;
  }
}
