import type { FrameLocator } from 'playwright-core';

/** The step-inspector webview (inside VS Code's two webview iframes). */
export class StepInspector {
  constructor(readonly frame: FrameLocator) {}

  async waitForStep(step: number, timeout = 20_000): Promise<void> {
    await this.frame.locator(`body[data-ready="true"][data-step="${step}"]`).waitFor({ timeout, state: 'attached' });
  }

  /** Per candidate card: index, whether it is the verifier's pick, its score label and its text. */
  async candidates(): Promise<Array<{ index: string; chosen: boolean; score: string; text: string }>> {
    return this.frame.locator('.candidate').evaluateAll((els) => els.map((e) => ({
      index: (e as HTMLElement).dataset.index ?? '',
      chosen: e.classList.contains('chosen'),
      score: e.querySelector('.score')?.textContent ?? '',
      text: e.querySelector('pre.text')?.textContent ?? '',
    })));
  }

  /** Reward table rows as [group, name, value, weight, share]. */
  async rewardRows(): Promise<string[][]> {
    return this.frame.locator('#reward tr.row').evaluateAll((els) => els.map((tr) => ['group', 'name', 'value', 'weight', 'share'].map((c) => tr.querySelector(`td.${c}`)?.textContent ?? '')));
  }

  async matrixCells(): Promise<number> {
    return this.frame.locator('#matrix g.cell').count();
  }

  async phiPoints(): Promise<{ all: number; current: number; drops: number }> {
    return {
      all: await this.frame.locator('#phi circle.point').count(),
      current: await this.frame.locator('#phi circle.point.current').count(),
      drops: await this.frame.locator('#phi circle.point.drop').count(),
    };
  }
}
