import type { Page } from 'playwright-core';

/** The Run and Debug side bar and toolbar while a `tbrl` session runs. */
export class DebugView {
  constructor(readonly page: Page) {}

  private frames() {
    return this.page.locator('.debug-call-stack .monaco-list-row .stack-frame .label');
  }

  /** Waits until the top stack frame is step `index` and returns its label. */
  async waitForTopFrame(index: number, timeout = 20_000): Promise<string> {
    const top = this.frames().first();
    await top.filter({ hasText: new RegExp(`^#${index} `) }).waitFor({ timeout });
    return top.innerText();
  }

  async frameLabels(): Promise<string[]> {
    return this.frames().allInnerTexts();
  }

  /** name → value of the rows currently shown in the Variables view. */
  /** The accessible labels of the rows now shown in the Variables view ("index, value 1", "Step", ...). */
  async variableLabels(): Promise<string[]> {
    const rows = this.page.locator('.debug-variables .monaco-list-row');
    await rows.first().waitFor({ timeout: 10_000 });
    return rows.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
  }

  /** VS Code labels each variable row "<name>, value <value>" for screen readers; that is the stable handle. */
  async waitForVariable(name: string, value: string, timeout = 10_000): Promise<void> {
    await this.page.locator(`.debug-variables .monaco-list-row[aria-label^=${JSON.stringify(`${name}, value ${value}`)}]`).first().waitFor({ timeout });
  }

  /** F5 until a session stops (the first F5 after load can land before the debug service has read launch.json). */
  async start(tries = 3): Promise<void> {
    for (let i = 0; i < tries; i++) {
      await this.page.keyboard.press('F5');
      try {
        await this.frames().first().waitFor({ timeout: 10_000 });
        return;
      } catch {
        // not started yet; press again
      }
    }
    throw new Error(`F5 started no debug session after ${tries} tries`);
  }

  /** Debug toolbar buttons by codicon: debug-step-back, debug-reverse-continue, debug-continue, debug-step-over, debug-stop. */
  async toolbar(icon: string): Promise<void> {
    // The toolbar greys its buttons while the workbench has not yet taken in a stop (the adapter's
    // events reach the extension first): a click on a grey button does nothing, so wait for it.
    await this.page.locator(`.debug-toolbar .action-label.codicon-${icon}:not(.disabled)`).click({ timeout: 20_000 });
  }

  /** Adds a function breakpoint the way a user does: command, inline input in the Breakpoints view, Enter. */
  async addFunctionBreakpoint(spec: string): Promise<void> {
    const header = this.page.locator('.pane-header', { hasText: /^breakpoints/i }).first();
    await header.hover();
    await header.locator('[aria-label="Add Function Breakpoint"]').click({ force: true });
    const input = this.page.locator('.debug-breakpoints .monaco-inputbox input, .debug-breakpoints textarea').first();
    await input.waitFor({ timeout: 10_000 });
    await input.fill(spec);
    await this.page.keyboard.press('Enter');
    await this.page.locator('.debug-breakpoints .monaco-list-row', { hasText: spec }).first().waitFor({ timeout: 10_000 });
  }

  async removeAllBreakpoints(): Promise<void> {
    const header = this.page.locator('.pane-header', { hasText: /^breakpoints/i }).first();
    await header.hover();
    await header.locator('[aria-label="Remove All Breakpoints"]').click({ force: true });
    await this.page.locator('.debug-breakpoints .monaco-list-row').first().waitFor({ state: 'detached', timeout: 10_000 });
  }

  /** Restart Frame from the Call Stack's context menu on the frame of step `index` (the tbrl debugger forks from it). */
  async restartFrame(index: number): Promise<void> {
    await this.frames().filter({ hasText: new RegExp(`^#${index} `) }).first().click({ button: 'right' });
    const item = this.page.locator('.monaco-menu .action-item', { hasText: 'Restart Frame' }).first();
    await item.waitFor({ timeout: 10_000 });
    // A menu ignores a click that lands while it is still opening; hovering focuses the item, Enter runs it.
    await item.hover();
    await this.page.keyboard.press('Enter');
    await this.page.locator('.context-view .monaco-menu').waitFor({ state: 'detached', timeout: 10_000 });
  }

  async stopIfRunning(): Promise<void> {
    if (await this.page.locator('.debug-toolbar .action-label.codicon-debug-stop').isVisible()) await this.stop();
  }

  async stop(): Promise<void> {
    await this.page.locator('.debug-toolbar .action-label.codicon-debug-stop').click();
    await this.frames().first().waitFor({ state: 'detached', timeout: 15_000 });
  }

  async waitForStopDescription(text: RegExp, timeout: number): Promise<void> {
    await this.page.locator('.pane-header', { hasText: text }).first().waitFor({ timeout });
  }

  async expandScope(name: string, expanded = true): Promise<void> {
    const row = this.page.locator(`.debug-variables .monaco-list-row[aria-label="Scope ${name}"]`).first();
    await row.waitFor({ timeout: 10_000 });
    if (((await row.getAttribute('aria-expanded')) === 'true') !== expanded) await row.click();
  }
}
