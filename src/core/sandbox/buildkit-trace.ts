/**
 * BuildKit reports build progress through the Engine API as `{"id": "moby.buildkit.trace", "aux":
 * <base64 protobuf>}` messages, each a `moby.buildkit.v1.StatusResponse` (buildkit's
 * api/services/control/control.proto). Only the fields tbrl shows are read: vertex names, their
 * errors and the log lines of each vertex. A hand-written reader of the protobuf wire format keeps a
 * protobuf runtime out of the dependencies.
 */
export interface BuildkitVertex {
  digest: string;
  name: string;
  started: boolean;
  completed: boolean;
  cached: boolean;
  error?: string;
}

export interface BuildkitStatus {
  vertexes: BuildkitVertex[];
  logs: Array<{ vertex: string; msg: string }>;
}

type Field = { no: number; wire: number; bytes?: Uint8Array; varint?: number };

function* fields(buf: Uint8Array): Generator<Field> {
  let i = 0;
  const varint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (i >= buf.length) throw new Error('truncated varint');
      const b = buf[i++];
      result += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return result;
      shift += 7;
      if (shift > 63) throw new Error('varint too long');
    }
  };
  while (i < buf.length) {
    const key = varint();
    const no = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) yield { no, wire, varint: varint() };
    else if (wire === 2) {
      const len = varint();
      if (i + len > buf.length) throw new Error('truncated field');
      yield { no, wire, bytes: buf.subarray(i, i + len) };
      i += len;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

const text = (b: Uint8Array | undefined): string => (b ? Buffer.from(b).toString('utf8') : '');

/** Decodes one `aux` payload (base64 of a StatusResponse); undefined when it is not one. */
export function decodeBuildkitStatus(aux: string): BuildkitStatus | undefined {
  try {
    const status: BuildkitStatus = { vertexes: [], logs: [] };
    for (const f of fields(Buffer.from(aux, 'base64'))) {
      if (f.wire !== 2 || !f.bytes) continue;
      if (f.no === 1) {
        const v: BuildkitVertex = { digest: '', name: '', started: false, completed: false, cached: false };
        for (const g of fields(f.bytes)) {
          if (g.no === 1) v.digest = text(g.bytes);
          else if (g.no === 3) v.name = text(g.bytes);
          else if (g.no === 4) v.cached = g.varint === 1;
          else if (g.no === 5) v.started = true;
          else if (g.no === 6) v.completed = true;
          else if (g.no === 7 && g.bytes?.length) v.error = text(g.bytes);
        }
        status.vertexes.push(v);
      } else if (f.no === 3) {
        let vertex = '';
        let msg = '';
        for (const g of fields(f.bytes)) {
          if (g.no === 1) vertex = text(g.bytes);
          else if (g.no === 4) msg = text(g.bytes);
        }
        status.logs.push({ vertex, msg });
      }
    }
    return status;
  } catch {
    return undefined;
  }
}

/**
 * Turns the stream of StatusResponses into plain progress lines (like `docker build --progress=plain`)
 * and remembers each vertex's log, so a failure can be shown with the output of the step that failed.
 */
export class BuildkitProgress {
  private readonly names = new Map<string, string>();
  private readonly announced = new Set<string>();
  private readonly logs = new Map<string, string[]>();
  private partial = new Map<string, string>();
  failed?: { name: string; error: string };

  constructor(private readonly onLine: (line: string) => void) {}

  push(status: BuildkitStatus): void {
    for (const v of status.vertexes) {
      if (v.name) this.names.set(v.digest, v.name);
      const name = this.names.get(v.digest) ?? v.digest;
      if ((v.started || v.cached) && !this.announced.has(v.digest)) {
        this.announced.add(v.digest);
        this.onLine(`${name}${v.cached ? ' (cached)' : ''}`);
      }
      if (v.error && !this.failed) this.failed = { name, error: v.error };
    }
    for (const l of status.logs) {
      const text = (this.partial.get(l.vertex) ?? '') + l.msg;
      const lines = text.split('\n');
      this.partial.set(l.vertex, lines.pop() ?? '');
      const kept = this.logs.get(l.vertex) ?? [];
      for (const line of lines.map((x) => x.replace(/\r$/, '')).filter(Boolean)) {
        kept.push(line);
        if (kept.length > 200) kept.shift();
        this.onLine(`  ${line}`);
      }
      this.logs.set(l.vertex, kept);
    }
  }

  /** The log lines of the vertex that failed (or the last lines of the whole build). */
  failedLog(): string[] {
    const digest = this.failed ? [...this.names.entries()].find(([, n]) => n === this.failed!.name)?.[0] : undefined;
    const own = digest ? [...(this.logs.get(digest) ?? []), ...(this.partial.get(digest) ? [this.partial.get(digest)!] : [])] : [];
    return own;
  }
}
