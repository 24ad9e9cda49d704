import type { FrameLocator } from 'playwright-core';

/** The eval comparison webview (inside VS Code's two webview iframes). */
export class EvalComparePage {
  constructor(readonly frame: FrameLocator) {}

  async waitForRows(count: number, timeout = 30_000): Promise<void> {
    await this.frame.locator(`#matrix tbody tr.task-row >> nth=${count - 1}`).waitFor({ timeout, state: 'attached' });
    await this.frame.locator(`#matrix tbody tr.task-row >> nth=${count}`).waitFor({ timeout, state: 'detached' });
  }

  /** Per shown row: the task, whether it is flipped, each cell's text, rate and fill, and the difference column. */
  async rows(): Promise<Array<{ task: string; flipped: boolean; cells: Array<{ text: string; rate: string; fill: string; trials: number }>; diff: string }>> {
    return this.frame.locator('#matrix tbody tr.task-row').evaluateAll((els) => els.map((tr) => ({
      task: (tr as HTMLElement).dataset.task ?? '',
      flipped: (tr as HTMLElement).dataset.flipped === 'true',
      cells: Array.from(tr.querySelectorAll('td.cell')).map((td) => ({ text: td.textContent ?? '', rate: (td as HTMLElement).dataset.rate ?? '', fill: getComputedStyle(td).backgroundColor, trials: Number((td as HTMLElement).dataset.trials) })),
      diff: tr.querySelector('td.diff')?.textContent ?? '',
    })));
  }

  async headers(): Promise<string[]> {
    return this.frame.locator('#matrix thead th').allTextContents();
  }

  async overall(): Promise<string[]> {
    return this.frame.locator('#matrix tfoot td').allTextContents();
  }

  async differences(): Promise<string[]> {
    return this.frame.locator('#differences .difference').allTextContents();
  }

  async filter(text: string): Promise<void> {
    await this.frame.locator('#filter').fill(text);
  }

  async sortBy(headerText: string): Promise<void> {
    await this.frame.locator('#matrix thead th', { hasText: headerText }).first().click();
  }

  async clickCell(task: string, job: number): Promise<void> {
    await this.frame.locator(`#matrix tr.task-row[data-task="${task}"] td.cell[data-job="${job}"]`).click();
  }

  async waitForStatus(text: string, timeout = 20_000): Promise<void> {
    await this.frame.locator('#status', { hasText: text }).waitFor({ timeout });
  }
}
