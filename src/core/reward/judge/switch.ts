import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { errorMessage } from '../../errors';
import type { ModelClientOptions } from '../../model/client';
import { backendLabel, createBackend, parseBackendConfig, type JudgeBackend, type JudgeBackendConfig } from './backends';

export interface BackendSwitchEvent {
  at: string;
  from: string | null;
  to: string | null;
  source: string;
}

export interface BackendSwitchOptions {
  /** A JSON file holding one backend config; editing it switches the backend of a running process. */
  controlFile?: string;
  /** Poll interval of the control file (fs.watch misses events on some filesystems). */
  pollMs?: number;
  log?: (line: string) => void;
  clientOptions?: ModelClientOptions;
}

/**
 * The judge backend in force, changeable at run time without interrupting anything: a judge call
 * takes the backend current when it starts and keeps it; the next call sees the new one. Changes
 * come from `setBackend` (settings, API) and from the control file; the most recent change wins.
 * Removing the control file returns to the last backend set through the API. Every switch is logged.
 */
export class JudgeBackendSwitch {
  readonly history: BackendSwitchEvent[] = [];
  private apiConfig?: JudgeBackendConfig;
  private active?: { config: JudgeBackendConfig; backend: JudgeBackend };
  /** Text of the control file last applied (undefined: no file). */
  private fileText?: string;
  private watcher?: FSWatcher;
  private poller?: ReturnType<typeof setInterval>;
  private readonly log: (line: string) => void;

  constructor(initial: JudgeBackendConfig | undefined, private readonly options: BackendSwitchOptions = {}) {
    this.log = options.log ?? ((line) => console.error(line));
    if (initial) this.setBackend(initial, 'initial');
  }

  get label(): string | null {
    return this.active ? this.active.backend.label : null;
  }

  get config(): JudgeBackendConfig | undefined {
    return this.active?.config;
  }

  setBackend(config: JudgeBackendConfig | unknown, source = 'api'): void {
    const parsed = parseBackendConfig(config, source);
    if (source !== 'control-file') this.apiConfig = parsed;
    this.activate(parsed, source);
  }

  private activate(config: JudgeBackendConfig | undefined, source: string): void {
    const from = this.label;
    const to = config ? backendLabel(config) : null;
    if (config && this.active && JSON.stringify(config) === JSON.stringify(this.active.config)) return;
    this.active = config ? { config, backend: createBackend(config, this.options.clientOptions) } : undefined;
    const event = { at: new Date().toISOString(), from, to, source };
    this.history.push(event);
    this.log(`judge backend ${from ? `switched: ${from} -> ${to ?? 'none'}` : `set: ${to}`} (${source})`);
  }

  /** Reads the control file now; a broken file keeps the current backend (and says why). */
  async refresh(): Promise<void> {
    const file = this.options.controlFile;
    if (!file) return;
    let text: string | undefined;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      text = undefined;
    }
    if (text === this.fileText) return;
    const previous = this.fileText;
    this.fileText = text;
    if (text === undefined) {
      if (previous !== undefined) {
        this.log(`judge control file ${file} removed; back to the backend set by the API`);
        this.activate(this.apiConfig, 'control-file removed');
      }
      return;
    }
    if (!text.trim()) return;
    try {
      const config = parseBackendConfig(JSON.parse(text), file);
      this.activate(config, 'control-file');
    } catch (err) {
      this.log(`judge control file ${file} ignored, keeping ${this.label ?? 'no backend'}: ${errorMessage(err)}`);
    }
  }

  /** The backend for the next judge call (re-reading the control file first, so a switch is never missed). */
  async current(): Promise<JudgeBackend | undefined> {
    await this.refresh();
    return this.active?.backend;
  }

  /** Applies control-file edits as they happen, so the log shows a switch when it is made. */
  watch(): this {
    const file = this.options.controlFile;
    if (!file || this.poller) return this;
    const kick = () => { void this.refresh(); };
    try {
      // Watch the directory: editors replace files by rename, which ends a watch on the file itself.
      this.watcher = watch(dirname(file), (_event, name) => { if (!name || name.toString() === basename(file)) kick(); });
      this.watcher.on('error', () => undefined);
      this.watcher.unref();
    } catch {
      this.watcher = undefined;
    }
    this.poller = setInterval(kick, this.options.pollMs ?? 2000);
    this.poller.unref();
    kick();
    return this;
  }

  close(): void {
    this.watcher?.close();
    if (this.poller) clearInterval(this.poller);
    this.watcher = undefined;
    this.poller = undefined;
  }
}
