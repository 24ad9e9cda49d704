import type { Page } from 'playwright-core';

/**
 * The active text editor as a user sees it: its tab, its lines, and text decorations drawn after
 * lines. `editor` selects which Monaco editor (e.g. one side of a diff; see diff-editor.ts).
 */
export class Editor {
  constructor(readonly page: Page, readonly editor = '.editor-group-container.active .monaco-editor') {}

  async waitForTab(title: string, timeout = 20_000): Promise<void> {
    await this.page.locator('.tabs-container .tab.active', { hasText: title }).first().waitFor({ timeout });
  }

  /**
   * Text drawn after the visible line that starts with `lineStart` (decorations' after-text is CSS
   * generated content, so it is read from the computed ::after/::before style, not the DOM text).
   */
  async afterText(lineStart: string): Promise<string[]> {
    return this.page.evaluate(([start, selector]) => {
      const editor = document.querySelector(selector) ?? document;
      const lines = Array.from(editor.querySelectorAll('.view-lines .view-line')).filter((l) => (l.textContent ?? '').replace(/\u00a0/g, ' ').startsWith(start));
      const out: string[] = [];
      for (const line of lines) {
        for (const el of [line, ...Array.from(line.querySelectorAll('*'))]) {
          for (const pseudo of ['::after', '::before']) {
            const c = getComputedStyle(el, pseudo).content;
            if (c && c !== 'none' && c !== 'normal') out.push(c.replace(/^"|"$/g, ''));
          }
        }
      }
      return out;
    }, [lineStart, this.editor] as const);
  }

  async activateTab(title: string): Promise<void> {
    await this.page.locator('.tabs-container .tab', { hasText: title }).first().click();
    await this.waitForTab(title);
  }

  /** Rests the mouse on the text of the visible line starting with `lineStart` until its hover shows. */
  async hoverLine(lineStart: string, timeout = 10_000): Promise<void> {
    // Editors of background tabs stay in the DOM, hidden: take the visible line.
    const line = this.page.locator(`${this.editor} .view-lines .view-line:visible`, { hasText: lineStart }).first();
    // The glyph-margin hover widget is always in the DOM (hidden); wait for the one with content.
    const hover = this.page.locator('.monaco-hover:not(.hidden) .hover-contents').first();
    const deadline = Date.now() + timeout;
    // Monaco re-renders its lines (a tab just activated, a layout pass): a line found visible can be
    // replaced before it is measured, and a hover can be dismissed by that pass, so both are retried.
    for (;;) {
      const left = deadline - Date.now();
      await line.waitFor({ state: 'visible', timeout: Math.max(left, 1) });
      const box = await line.boundingBox();
      if (box) {
        await this.page.mouse.move(box.x + 20, box.y + box.height / 2);
        const shown = await hover.waitFor({ state: 'visible', timeout: Math.max(Math.min(3_000, deadline - Date.now()), 1) }).then(() => true, () => false);
        if (shown) return;
        // Out of the editor and back: Monaco only opens a hover on a mouse move over the text.
        await this.page.mouse.move(1, 1);
      }
      if (Date.now() > deadline) throw new Error(`No hover showed on the line starting "${lineStart}" within ${timeout} ms${box ? '' : ' (the line was never measurable)'}`);
      await this.page.waitForTimeout(200);
    }
  }

  async waitForAfterText(lineStart: string, expected: RegExp, timeout = 20_000): Promise<string[]> {
    const deadline = Date.now() + timeout;
    let last: string[] = [];
    while (Date.now() < deadline) {
      last = await this.afterText(lineStart);
      if (last.some((t) => expected.test(t))) return last;
      await this.page.waitForTimeout(250);
    }
    throw new Error(`No after-text matching ${expected} on the line starting "${lineStart}" within ${timeout} ms; saw ${JSON.stringify(last)}`);
  }
}
