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
      // The dialog re-lists the folder as the value changes and, while it does, may write its own
      // value over ours (a completion, the folder it opened in): fill again until ours has held
      // for a moment, so OK takes exactly `path`.
      const deadline = Date.now() + 20_000;
      for (;;) {
        await input.fill(path);
        await this.page.waitForTimeout(400);
        if ((await input.inputValue()) === path) {
          await this.page.waitForTimeout(400);
          if ((await input.inputValue()) === path) break;
        }
        if (Date.now() > deadline) throw new Error(`the file dialog kept replacing ${path} (last value: ${await input.inputValue()})`);
      }
    }
    await this.okButton(okLabel).click();
    await this.okButton(okLabel).waitFor({ state: 'hidden', timeout: 20_000 });
  }
}
