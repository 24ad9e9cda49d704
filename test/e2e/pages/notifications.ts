import type { Locator, Page } from 'playwright-core';

/** Notification toasts: the extension's messages and the buttons it offers with them. */
export class Notifications {
  constructor(readonly page: Page) {}

  /** The toast whose text matches `text`, once it is shown. */
  async toast(text: string | RegExp, timeout = 20_000): Promise<Locator> {
    const toast = this.page.locator('.notifications-toasts .notification-toast', { hasText: text }).last();
    await toast.waitFor({ state: 'visible', timeout });
    return toast;
  }

  /** Waits for the toast matching `text` and clicks its button `label`. */
  async click(text: string | RegExp, label: string, timeout = 20_000): Promise<void> {
    const toast = await this.toast(text, timeout);
    await toast.locator('.monaco-button', { hasText: label }).click();
  }
}
