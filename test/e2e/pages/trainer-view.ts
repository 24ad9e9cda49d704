import type { Locator, Page } from 'playwright-core';

/** The Trainer view (jobs of the connected Ray cluster) in the TBRL Studio side bar. */
export class TrainerView {
  constructor(readonly page: Page) {}

  private pane(): Locator {
    return this.page.locator('.pane', { has: this.page.locator('.pane-header', { hasText: 'Trainer' }) });
  }

  /** The row of a job (or a message row) containing `text`. */
  row(text: string): Locator {
    return this.pane().locator('.monaco-list-row', { hasText: text }).first();
  }

  async rows(): Promise<string[]> {
    const rows = this.pane().locator('.monaco-list-row');
    await rows.first().waitFor({ timeout: 20_000 });
    return rows.allInnerTexts();
  }

  /** Waits until the job's row shows `status` (the view refreshes itself while a job is active). */
  async waitForStatus(id: string, status: string, timeout = 30_000): Promise<string> {
    const row = this.pane().locator('.monaco-list-row', { hasText: id }).filter({ hasText: status }).first();
    await row.waitFor({ timeout });
    return row.innerText();
  }

  /** The row's inline action (Stop Job, Open Training Dashboard), shown on hover. */
  async inlineAction(id: string, title: string): Promise<void> {
    const row = this.row(id);
    await row.hover();
    const action = row.locator(`.actions .action-label[aria-label="${title}"]`);
    await action.waitFor({ timeout: 10_000 });
    await action.click();
  }

  /** A click on the job's row (its command opens the job's log). */
  async open(id: string): Promise<void> {
    await this.row(id).click();
  }
}
