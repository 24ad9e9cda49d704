import type { Page } from 'playwright-core';

/**
 * VS Code's simple file dialog, which code-server shows for showOpenDialog / showSaveDialog: a
 * quick input holding a path, with the dialog's open or save label as its OK button.
 */
export class FileDialog {
  constructor(readonly page: Page) {}

  // The quick input is one widget reused by the next question, which keeps the OK button hidden.
  private okButton(okLabel: string) {
    return this.page.locator('.quick-input-widget .quick-input-action .monaco-button:visible', { hasText: okLabel });
  }

  private widget(okLabel: string) {
    return this.page.locator('.quick-input-widget', { has: this.page.locator('.quick-input-action .monaco-button:visible', { hasText: okLabel }) });
  }

  /**
   * The path the dialog offers once it has settled (folder dialogs end it with a slash): it opens on
   * a parent folder and moves to the default path as the listing arrives.
   */
  async value(okLabel: string, timeout = 20_000): Promise<string> {
    const widget = this.widget(okLabel);
    await widget.waitFor({ state: 'visible', timeout });
    const input = widget.locator('input').first();
    const deadline = Date.now() + timeout;
    let last = await input.inputValue();
    for (let same = 0; same < 5 && Date.now() < deadline; ) {
      await this.page.waitForTimeout(200);
      const now = await input.inputValue();
      same = now === last ? same + 1 : 0;
      last = now;
    }
    return last;
  }

  /** Accept `path` (or the path the dialog opened with) through the OK button. */
  async accept(okLabel: string, path?: string): Promise<void> {
    const widget = this.widget(okLabel);
    await widget.waitFor({ state: 'visible', timeout: 20_000 });
    const input = widget.locator('input').first();
    if (path !== undefined) {
      await input.fill(path);
      // The dialog re-lists the folder as the value changes; OK takes the value once it has settled.
      await this.page.waitForFunction(([sel, want]) => (document.querySelector(sel) as HTMLInputElement | null)?.value === want, ['.quick-input-widget input', path] as const, { timeout: 5_000 });
    }
    await this.okButton(okLabel).click();
    await this.okButton(okLabel).waitFor({ state: 'hidden', timeout: 20_000 });
  }
}
