import type { FrameLocator } from 'playwright-core';

/** The training dashboard webview (inside VS Code's two webview iframes). */
export class TrainerDashboardPage {
  constructor(readonly frame: FrameLocator) {}

  async waitForStatus(status: string, timeout = 60_000): Promise<void> {
    await this.frame.locator(`#job-status[data-status="${status}"]`).waitFor({ timeout, state: 'attached' });
  }

  async title(): Promise<string> {
    return (await this.frame.locator('.header .title').textContent()) ?? '';
  }

  /** Per chart: its id, the number of points drawn, its title line, and the dots drawn, and whether a line path was drawn. */
  async charts(): Promise<Array<{ id: string; points: number; dots: number; title: string; hasLine: boolean }>> {
    return this.frame.locator('#charts .chart').evaluateAll((els) => els.map((e) => ({
      id: (e as HTMLElement).dataset.chart ?? '',
      points: Number((e as HTMLElement).dataset.points ?? 0),
      dots: e.querySelectorAll('circle.point').length,
      title: e.querySelector('.chart-title')?.textContent ?? '',
      hasLine: !!e.querySelector('path.series')?.getAttribute('d'),
    })));
  }

  async waitForChartPoints(id: string, timeout = 30_000): Promise<void> {
    await this.frame.locator(`#charts .chart[data-chart="${id}"]:not([data-points="0"])`).waitFor({ timeout, state: 'attached' });
  }

  async log(): Promise<string> {
    return (await this.frame.locator('#log').textContent()) ?? '';
  }
}
