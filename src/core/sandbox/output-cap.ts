/**
 * Keeps the first and last halves of a byte stream and counts what fell out of the middle, so a
 * command printing 50 MB costs a bounded amount of memory and the agent still sees how it began
 * and how it ended. Works on bytes: a multi-byte character split by the cap or by chunking never
 * corrupts framing; decoding happens once, at the end.
 */
export class CappedOutput {
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;

  constructor(maxBytes: number) {
    const max = Math.max(0, Math.floor(maxBytes));
    this.headLimit = Math.ceil(max / 2);
    this.tailLimit = max - this.headLimit;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.total += chunk.length;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(chunk.length, this.headLimit - this.headBytes);
      this.head.push(chunk.subarray(0, take));
      this.headBytes += take;
      chunk = chunk.subarray(take);
      if (chunk.length === 0) return;
    }
    if (this.tailLimit === 0) return;
    // Copy: the caller's buffer may be a view on a larger socket buffer we must not pin.
    this.tail.push(Buffer.from(chunk.length > this.tailLimit ? chunk.subarray(chunk.length - this.tailLimit) : chunk));
    this.tailBytes += Math.min(chunk.length, this.tailLimit);
    while (this.tailBytes - this.tail[0].length >= this.tailLimit) {
      this.tailBytes -= this.tail[0].length;
      this.tail.shift();
    }
  }

  get totalBytes(): number {
    return this.total;
  }

  get droppedBytes(): number {
    return Math.max(0, this.total - this.headLimit - this.tailLimit);
  }

  /** Decoded text: head, a marker naming the dropped byte count, tail. Invalid UTF-8 becomes U+FFFD. */
  text(): string {
    const head = Buffer.concat(this.head);
    let tail = Buffer.concat(this.tail);
    if (tail.length > this.tailLimit) tail = tail.subarray(tail.length - this.tailLimit);
    const dropped = this.droppedBytes;
    if (dropped === 0) return Buffer.concat([head, tail]).toString('utf8');
    return `${head.toString('utf8')}\n[... ${dropped} bytes of output dropped (output cap ${this.headLimit + this.tailLimit} bytes keeps head and tail) ...]\n${tail.toString('utf8')}`;
  }
}
