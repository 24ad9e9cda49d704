/**
 * Typed messages between the extension host and a webview. Declare each message once (in the
 * app's protocol.ts) with `request<P, R>('name')` or `notification<P>('name')`; `Endpoint` then
 * checks parameters and results on both sides. Requests get replies matched by id; an exception
 * in a handler comes back to the caller as a rejected promise with the handler's message.
 */
export interface RequestType<P, R> {
  readonly kind: 'request';
  readonly method: string;
  /** Phantom: carries the parameter and result types, never set. */
  readonly types?: { params: P; result: R };
}

export interface NotificationType<P> {
  readonly kind: 'notification';
  readonly method: string;
  readonly types?: { params: P };
}

export function request<P, R>(method: string): RequestType<P, R> {
  return { kind: 'request', method };
}

export function notification<P>(method: string): NotificationType<P> {
  return { kind: 'notification', method };
}

export type WireMessage =
  | { tbrl: 1; type: 'request'; id: number; method: string; params: unknown }
  | { tbrl: 1; type: 'reply'; id: number; result?: unknown; error?: string }
  | { tbrl: 1; type: 'notification'; method: string; params: unknown };

export function isWireMessage(value: unknown): value is WireMessage {
  const m = value as Partial<WireMessage> | null;
  return typeof m === 'object' && m !== null && m.tbrl === 1 && (m.type === 'request' || m.type === 'reply' || m.type === 'notification');
}

export class Endpoint {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer?: ReturnType<typeof setTimeout> }>();
  private readonly requestHandlers = new Map<string, (params: unknown) => unknown>();
  private readonly notificationHandlers = new Map<string, Array<(params: unknown) => void>>();

  constructor(private readonly post: (message: WireMessage) => void, private readonly timeoutMs = 30_000) {}

  /** `timeoutMs` 0 waits as long as it takes: for a request whose handler waits for the user (an input box). */
  sendRequest<P, R>(type: RequestType<P, R>, params: P, timeoutMs = this.timeoutMs): Promise<R> {
    const id = this.nextId++;
    return new Promise<R>((resolve, reject) => {
      const timer = timeoutMs > 0 ? setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`No reply to ${type.method} within ${timeoutMs} ms: the other side is not listening (panel closed or reloaded).`));
      }, timeoutMs) : undefined;
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.post({ tbrl: 1, type: 'request', id, method: type.method, params });
    });
  }

  sendNotification<P>(type: NotificationType<P>, params: P): void {
    this.post({ tbrl: 1, type: 'notification', method: type.method, params });
  }

  onRequest<P, R>(type: RequestType<P, R>, handler: (params: P) => R | Promise<R>): void {
    this.requestHandlers.set(type.method, handler as (params: unknown) => unknown);
  }

  onNotification<P>(type: NotificationType<P>, handler: (params: P) => void): () => void {
    const list = this.notificationHandlers.get(type.method) ?? [];
    list.push(handler as (params: unknown) => void);
    this.notificationHandlers.set(type.method, list);
    return () => list.splice(list.indexOf(handler as (params: unknown) => void), 1);
  }

  /** Feed every message received from the other side here; foreign messages are ignored. */
  async receive(message: unknown): Promise<void> {
    if (!isWireMessage(message)) return;
    if (message.type === 'reply') {
      const w = this.waiting.get(message.id);
      if (!w) return;
      this.waiting.delete(message.id);
      if (w.timer) clearTimeout(w.timer);
      if (message.error !== undefined) w.reject(new Error(message.error));
      else w.resolve(message.result);
      return;
    }
    if (message.type === 'notification') {
      for (const h of this.notificationHandlers.get(message.method) ?? []) h(message.params);
      return;
    }
    const handler = this.requestHandlers.get(message.method);
    if (!handler) {
      this.post({ tbrl: 1, type: 'reply', id: message.id, error: `No handler for ${message.method}.` });
      return;
    }
    try {
      this.post({ tbrl: 1, type: 'reply', id: message.id, result: await handler(message.params) });
    } catch (err) {
      this.post({ tbrl: 1, type: 'reply', id: message.id, error: err instanceof Error ? err.message : String(err) });
    }
  }

  dispose(): void {
    for (const w of this.waiting.values()) {
      if (w.timer) clearTimeout(w.timer);
      w.reject(new Error('The webview connection was closed.'));
    }
    this.waiting.clear();
  }
}
