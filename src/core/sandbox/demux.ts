/**
 * Splits Docker's multiplexed attach stream (8-byte header: stream type, 3 zero bytes, big-endian
 * payload size) into stdout/stderr payloads. Frames may be split across socket chunks arbitrarily.
 */
export class DockerDemuxer {
  private buffered: Buffer = Buffer.alloc(0);

  constructor(private readonly onFrame: (stream: 'stdout' | 'stderr', payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    let offset = 0;
    while (this.buffered.length - offset >= 8) {
      const type = this.buffered[offset];
      const size = this.buffered.readUInt32BE(offset + 4);
      if (this.buffered.length - offset - 8 < size) break;
      const payload = this.buffered.subarray(offset + 8, offset + 8 + size);
      offset += 8 + size;
      // Type 0 is stdin echo (never sent without a TTY); treat anything but 2 as stdout.
      this.onFrame(type === 2 ? 'stderr' : 'stdout', payload);
    }
    this.buffered = offset === this.buffered.length ? Buffer.alloc(0) : this.buffered.subarray(offset);
  }
}
