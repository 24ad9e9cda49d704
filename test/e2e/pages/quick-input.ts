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

  /** In a multi-select quick pick showing `text`: the label of each row and whether it is checked. */
  async checkedRows(text: string, timeout = 20_000): Promise<Array<{ label: string; checked: boolean }>> {
    const widget = this.widget(text);
    await widget.waitFor({ state: 'visible', timeout });
    await widget.locator('.quick-input-list .monaco-list-row').first().waitFor({ timeout });
    return widget.locator('.quick-input-list .monaco-list-row').evaluateAll((rows) => rows.map((r) => ({
      label: r.querySelector('.label-name')?.textContent ?? r.textContent ?? '',
      checked: (r.querySelector('input[type=checkbox]') as HTMLInputElement | null)?.checked ?? r.getAttribute('aria-checked') === 'true',
    })));
  }
}
