import type { Page } from 'playwright-core';

/** The quick input as the extension's input boxes and quick picks use it, found by their title or prompt. */
export class QuickInput {
  constructor(readonly page: Page) {}

  private widget(text: string) {
    return this.page.locator('.quick-input-widget', { hasText: text });
  }

  /**
   * Answer the box showing `text` with `value` (undefined keeps the value it offers). It waits for
   * that box: an Enter sent while the next question is still opening would be lost.
   */
  async answer(text: string, value?: string, timeout = 20_000): Promise<void> {
    const widget = this.widget(text);
    await widget.waitFor({ state: 'visible', timeout });
    if (value !== undefined) await widget.locator('input').first().fill(value);
    await this.page.keyboard.press('Enter');
    await this.page.locator('.quick-input-widget', { hasText: text }).waitFor({ state: 'hidden', timeout }).catch(() => undefined);
  }

  /** The value the box showing `text` offers. */
  async value(text: string, timeout = 20_000): Promise<string> {
    const widget = this.widget(text);
    await widget.waitFor({ state: 'visible', timeout });
    return widget.locator('input').first().inputValue();
  }

  /** Pick the row containing `row` in the quick pick showing `text`. */
  async pick(text: string, row: string, timeout = 20_000): Promise<void> {
    const widget = this.widget(text);
    await widget.waitFor({ state: 'visible', timeout });
    const item = widget.locator('.quick-input-list .monaco-list-row', { hasText: row }).first();
    await item.waitFor({ timeout });
    await item.click();
  }

  /** In a multi-select quick pick showing `text`: each row's text (label, description, detail) and whether it is checked. */
  async checkedRows(text: string, timeout = 20_000): Promise<Array<{ text: string; checked: boolean }>> {
    const widget = this.widget(text);
    await widget.waitFor({ state: 'visible', timeout });
    await widget.locator('.quick-input-list .monaco-list-row').first().waitFor({ timeout });
    return widget.locator('.quick-input-list .monaco-list-row').evaluateAll((rows) => rows.map((r) => ({ text: r.textContent ?? '', checked: r.getAttribute('aria-checked') === 'true' })));
  }

  /** In a multi-select quick pick showing `text`: flips the checkbox of the row containing `row`. */
  async toggle(text: string, row: string, timeout = 20_000): Promise<void> {
    const item = this.widget(text).locator('.quick-input-list .monaco-list-row', { hasText: row }).first();
    await item.waitFor({ timeout });
    const was = await item.getAttribute('aria-checked');
    await item.locator('.quick-input-list-label').click();
    const deadline = Date.now() + 5_000;
    while ((await item.getAttribute('aria-checked')) === was) {
      if (Date.now() > deadline) throw new Error(`the row "${row}" of "${text}" did not change from checked=${was}`);
      await this.page.waitForTimeout(100);
    }
  }
}
