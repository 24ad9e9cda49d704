import type { Page, FrameLocator } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

export const SCREENSHOTS = join('test-results', 'e2e');

/** The VS Code workbench as a user drives it: command palette, quick picks, keys, screenshots. */
export class Workbench {
  constructor(readonly page: Page) {}

  async open(url: string): Promise<void> {
    await this.page.goto(url);
    await this.page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
    // The extension host and the workspace's file index start after the shell renders.
    await this.page.waitForSelector('.activitybar .action-item a[aria-label^="TBRL Studio"]', { timeout: 60_000 });
  }

  async runCommand(label: string): Promise<void> {
    const input = this.page.locator('.quick-input-widget input');
    // With focus inside a webview, the palette F1 opens can close again while focus settles:
    // open it again rather than typing into a hidden box (three tries, then the real error).
    for (let attempt = 1; ; attempt++) {
      await this.page.keyboard.press('F1');
      try {
        await input.waitFor({ state: 'visible', timeout: 10_000 });
        await input.fill(`>${label}`, { timeout: 5_000 });
        break;
      } catch (err) {
        if (attempt === 3) throw err;
        await this.page.keyboard.press('Escape');
      }
    }
    await this.page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first().waitFor({ timeout: 10_000 });
    // Enter runs the focused row, which need not be ours when a longer title also matches (Refresh
    // Jobs / Refresh Eval Jobs): move the focus onto the row with this label first.
    const focused = this.page.locator('.quick-input-list .monaco-list-row.focused', { hasText: label });
    for (let i = 0; i < 8 && (await focused.count()) === 0; i++) await this.page.keyboard.press('ArrowDown');
    await this.page.keyboard.press('Enter');
  }

  /** Pick the quick-pick entry containing `text`. */
  async pick(text: string): Promise<void> {
    const row = this.page.locator('.quick-input-list .monaco-list-row', { hasText: text }).first();
    await row.waitFor({ timeout: 20_000 });
    await row.click();
  }

  async showView(containerLabel: string): Promise<void> {
    const item = this.page.locator(`.activitybar .action-item a[aria-label^="${containerLabel}"]`);
    const parent = item.locator('xpath=..');
    if (!((await parent.getAttribute('class')) ?? '').includes('checked')) await item.click();
  }

  /** Text of the tree rows of a side-bar view, by its title. */
  async treeRows(viewTitle: string): Promise<string[]> {
    const pane = this.page.locator('.pane', { has: this.page.locator('.pane-header', { hasText: viewTitle }) });
    const rows = pane.locator('.monaco-list-row');
    await rows.first().waitFor({ timeout: 20_000 });
    return rows.allInnerTexts();
  }

  webview(): FrameLocator {
    return this.page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
  }

  async screenshot(name: string): Promise<string> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const path = join(SCREENSHOTS, `${name}.png`);
    await this.page.screenshot({ path });
    return path;
  }
}
