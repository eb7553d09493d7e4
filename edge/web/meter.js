// The level of a MediaStream (the microphone, or the answer arriving over WebRTC), read at an
// AnalyserNode every 50 ms: `level` now, `peakRms` since it started. The analyser is not connected
// to the speakers (Chromium pulls an AnalyserNode by itself), so metering never plays anything.

export class LevelMeter {
  constructor(ctx, stream) {
    this.source = ctx.createMediaStreamSource(stream);
    this.analyser = ctx.createAnalyser();
    this.analyser.fftSize = 1024;
    this.source.connect(this.analyser);
    this.scratch = new Float32Array(this.analyser.fftSize);
    this.level = 0;
    this.peakRms = 0;
    this.timer = setInterval(() => this.read(), 50);
  }

  read() {
    this.analyser.getFloatTimeDomainData(this.scratch);
    let sum = 0;
    for (let i = 0; i < this.scratch.length; i++) sum += this.scratch[i] * this.scratch[i];
    this.level = Math.sqrt(sum / this.scratch.length);
    if (this.level > this.peakRms) this.peakRms = this.level;
  }

  stop() {
    clearInterval(this.timer);
    this.source.disconnect();
    this.level = 0;
  }
}
