import type { FrameLocator, Page } from 'playwright-core';

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

  summaryNodes() {
    return this.frame.locator('g.node.summary');
  }

  async summaryIds(): Promise<string[]> {
    return this.summaryNodes().evaluateAll((els) => els.map((e) => e.getAttribute('data-id') ?? ''));
  }

  async commandIds(): Promise<string[]> {
    return this.commandNodes().evaluateAll((els) => els.map((e) => e.getAttribute('data-id') ?? ''));
  }

  /** Waits until exactly `n` command nodes are drawn (a live graph redraws as steps are written). */
  async waitForCommandCount(n: number, timeout = 30_000): Promise<void> {
    const until = Date.now() + timeout;
    let count = -1;
    while (Date.now() < until) {
      count = await this.commandNodes().count();
      if (count === n) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`the trace graph shows ${count} command node(s), expected ${n}`);
  }

  async clickSummary(id: string): Promise<void> {
    await this.frame.locator(`g.node.summary[data-id="${id}"] rect.front`).click();
  }

  /** The ⊟ handle on a command of an unfolded group folds that group back. */
  async foldBack(commandId: string): Promise<void> {
    await this.frame.locator(`g.node.command[data-id="${commandId}"] .fold-handle rect`).click();
  }

  async altClickCommand(id: string): Promise<void> {
    await this.frame.locator(`g.node.command[data-id="${id}"] rect`).first().click({ modifiers: ['Alt'] });
  }

  collapseAllButton() {
    return this.frame.locator('#collapse-all');
  }

  async foldBy(value: 'independent' | 'off-path'): Promise<void> {
    await this.frame.locator('#fold-by').selectOption(value);
  }

  /** Hovers a node (by its data-id) and returns the tooltip text. */
  async hoverText(id: string): Promise<string> {
    await this.frame.locator(`g.node[data-id="${id}"] > rect:not(.behind)`).first().hover();
    const tip = this.frame.locator('#tooltip');
    await tip.waitFor({ state: 'visible', timeout: 5_000 });
    return tip.innerText();
  }

  /** Edges drawn into a node, as "source>target" with their hover title. */
  async edgesInto(id: string): Promise<Array<{ source: string; title: string }>> {
    return this.frame.locator(`path.edge[data-target="${id}"]`).evaluateAll((els) => els.map((e) => ({ source: e.getAttribute('data-source') ?? '', title: e.querySelector('title')?.textContent ?? '' })));
  }

  async status(): Promise<string> {
    return this.frame.locator('#status').innerText();
  }

  async live(): Promise<boolean> {
    return (await this.frame.locator('body').getAttribute('data-live')) === 'true';
  }

  /** The zoom/pan transform of the drawing. */
  async transform(): Promise<string> {
    return (await this.frame.locator('svg#graph g.root').getAttribute('transform')) ?? '';
  }

  /** Zooms in with the mouse wheel over the middle of the graph, as a user does. */
  async zoomIn(page: Page): Promise<void> {
    const box = await this.frame.locator('svg#graph').boundingBox();
    if (!box) throw new Error('the graph is not on screen');
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -300);
  }
}
