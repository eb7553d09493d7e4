// AudioWorklet: microphone -> 24 kHz mono PCM16 chunks posted to the page.
//
// The page asks for a 24 kHz AudioContext, so usually no resampling happens here. Browsers that
// refuse that rate run at their own rate; then we resample linearly (adequate for speech that the
// edge resamples again, properly, to 16 kHz for VAD and STT).

const TARGET_RATE = 24000;
const CHUNK = 480; // 20 ms at 24 kHz: small enough for snappy VAD, few enough messages

class PcmCapture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / TARGET_RATE; // input samples per output sample
    this.pos = 0; // fractional read position into the current block (resampling only)
    this.last = 0; // previous block's final sample, for interpolating across blocks
    this.out = new Int16Array(CHUNK);
    this.n = 0;
    this.sumSq = 0;
  }

  push(x) {
    const s = Math.max(-1, Math.min(1, x));
    this.out[this.n++] = s < 0 ? s * 0x8000 : s * 0x7fff;
    this.sumSq += s * s;
    if (this.n === CHUNK) {
      const rms = Math.sqrt(this.sumSq / CHUNK);
      this.port.postMessage({ pcm: this.out.buffer, rms }, [this.out.buffer]);
      this.out = new Int16Array(CHUNK);
      this.n = 0;
      this.sumSq = 0;
    }
  }

  process(inputs) {
    const ch = inputs[0] && inputs[0][0];
    if (!ch) return true;
    if (this.step === 1) {
      for (let i = 0; i < ch.length; i++) this.push(ch[i]);
      return true;
    }
    // Linear interpolation; index -1 is the previous block's last sample.
    while (this.pos < ch.length) {
      const i = Math.floor(this.pos);
      const frac = this.pos - i;
      const a = i === 0 ? this.last : ch[i - 1];
      const b = ch[i];
      this.push(a + (b - a) * frac);
      this.pos += this.step;
    }
    this.pos -= ch.length;
    this.last = ch[ch.length - 1];
    return true;
  }
}

registerProcessor("pcm-capture", PcmCapture);
