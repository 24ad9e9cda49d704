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

  /** Toggles an edge kind with its toolbar checkbox ('file-edges' or 'stdout-edges'). */
  async toggle(id: 'file-edges' | 'stdout-edges'): Promise<void> {
    await this.frame.locator(`#${id}`).click();
  }

  async checked(id: 'file-edges' | 'stdout-edges'): Promise<boolean> {
    return this.frame.locator(`#${id}`).isChecked();
  }

  async visibleEdges(kind: 'file' | 'stdout'): Promise<number> {
    return this.frame.locator(`path.edge.${kind}`).evaluateAll((els) => els.filter((e) => (e as SVGElement).style.display !== 'none').length);
  }

  async restoredFromState(): Promise<boolean> {
    return (await this.frame.locator('body').getAttribute('data-restored')) === 'true';
  }

  async renderMs(): Promise<number> {
    return Number(await this.frame.locator('body').getAttribute('data-render-ms'));
  }
}
