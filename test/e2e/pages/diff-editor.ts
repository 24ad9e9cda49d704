import type { Page } from 'playwright-core';
import { Editor } from './editor';

const DIFF = '.editor-group-container.active .monaco-diff-editor';

/** The active diff editor: its two sides, each an Editor (lines, after-text decorations, hovers). */
export class DiffEditor {
  readonly original: Editor;
  readonly modified: Editor;

  constructor(readonly page: Page) {
    this.original = new Editor(page, `${DIFF} .editor.original .monaco-editor`);
    this.modified = new Editor(page, `${DIFF} .editor.modified .monaco-editor`);
  }

  /** Waits until both sides are shown side by side. */
  async waitForSideBySide(timeout = 20_000): Promise<void> {
    await this.page.locator(`${DIFF} .editor.original .view-lines`).first().waitFor({ state: 'visible', timeout });
    await this.page.locator(`${DIFF} .editor.modified .view-lines`).first().waitFor({ state: 'visible', timeout });
  }

  /** The rendered lines of one side, top to bottom (Monaco does not keep its line elements in order). */
  async lines(side: 'original' | 'modified'): Promise<string[]> {
    return this.page.evaluate((selector) => {
      const root = document.querySelector(selector);
      if (!root) return [];
      return Array.from(root.querySelectorAll<HTMLElement>('.view-lines .view-line'))
        .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
        .map((l) => (l.textContent ?? '').replace(/\u00a0/g, ' '));
    }, (side === 'original' ? this.original : this.modified).editor);
  }

  /** Polls until `side` shows a line for which `match` holds; returns the lines. */
  async waitForLine(side: 'original' | 'modified', match: (line: string) => boolean, timeout = 20_000): Promise<string[]> {
    const deadline = Date.now() + timeout;
    let last: string[] = [];
    while (Date.now() < deadline) {
      last = await this.lines(side);
      if (last.some(match)) return last;
      await this.page.waitForTimeout(250);
    }
    throw new Error(`The ${side} side of the diff never showed the expected line within ${timeout} ms; it shows ${JSON.stringify(last)}`);
  }
}
