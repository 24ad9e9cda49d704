import type { FrameLocator } from 'playwright-core';

/** The trace-graph webview (inside VS Code's two webview iframes). */
export class TraceGraph {
  constructor(readonly frame: FrameLocator) {}

  async waitReady(timeout = 20_000): Promise<void> {
    await this.frame.locator('body[data-ready="true"]').waitFor({ timeout, state: 'attached' });
  }

  commandNodes() {
    return this.frame.locator('g.node.command');
  }

  sinkNodes() {
    return this.frame.locator('g.node.sink');
  }

  async sinkIds(): Promise<string[]> {
    return this.sinkNodes().evaluateAll((els) => els.map((e) => e.getAttribute('data-id') ?? ''));
  }

  async onPathIds(): Promise<string[]> {
    return this.frame.locator('g.node.command.on-path').evaluateAll((els) => els.map((e) => e.getAttribute('data-id') ?? ''));
  }

  async stats(): Promise<string> {
    return this.frame.locator('#stats').innerText();
  }

  async clickCommand(id: string): Promise<void> {
    await this.frame.locator(`g.node.command[data-id="${id}"] rect`).click();
  }

  async currentIds(): Promise<string[]> {
    return this.frame.locator('g.node.command.current').evaluateAll((els) => els.map((e) => e.getAttribute('data-id') ?? ''));
  }

  async renderMs(): Promise<number> {
    return Number(await this.frame.locator('body').getAttribute('data-render-ms'));
  }
}
