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

  /** Waits until the inspected step is turn `step` waiting to run in a live session (its cards can decide it). */
  async waitForPending(step: number, timeout = 60_000): Promise<void> {
    await this.frame.locator(`body[data-ready="true"][data-step="${step}"][data-pending="true"]`).waitFor({ timeout, state: 'attached' });
  }

  /** Every decision button: its label, action, candidate (card buttons) and whether it can be clicked. */
  async decideButtons(): Promise<Array<{ label: string; action: string; candidate?: string; disabled: boolean }>> {
    return this.frame.locator('button.decide').evaluateAll((els) => els.map((e) => {
      const b = e as HTMLButtonElement;
      return { label: b.textContent ?? '', action: b.dataset.action ?? '', ...(b.dataset.candidate !== undefined ? { candidate: b.dataset.candidate } : {}), disabled: b.disabled };
    }));
  }

  /** "Run this" / "Accept verifier's pick" on candidate card `index`. */
  async runCandidate(index: number): Promise<void> {
    await this.frame.locator(`.candidate[data-index="${index}"] button.decide`).click();
  }

  /** The bar's buttons: "edit" (Edit…) or "stop" (Stop run). */
  async clickBar(action: 'edit' | 'stop'): Promise<void> {
    await this.frame.locator(`#decide button.decide[data-action="${action}"]`).click();
  }

  async waitForStatus(text: RegExp, timeout = 20_000): Promise<string> {
    const status = this.frame.locator('#status');
    const deadline = Date.now() + timeout;
    for (;;) {
      const now = (await status.textContent()) ?? '';
      if (text.test(now)) return now;
      if (Date.now() > deadline) throw new Error(`status line ${JSON.stringify(now)} never matched ${text}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async meta(): Promise<string> {
    return (await this.frame.locator('.toolbar .meta').textContent()) ?? '';
  }

  /** Indexes of the cards marked as the turn that ran. */
  async executed(): Promise<string[]> {
    return this.frame.locator('.candidate.executed').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.index ?? ''));
  }
}
