import * as vscode from 'vscode';
import { join } from 'node:path';
import { lineAttribution, type FileAttribution } from '../../core/attribution/lines';
import { decorationModel, type DecorationKind } from '../../core/attribution/decorations';
import { readTrajectory } from '../../core/trajectory/reader';
import { errorMessage } from '../../core/errors';
import { CONTAINER_SCHEME, parseContainerUri } from './uri';

const STYLES: Record<DecorationKind, { background: string; border: string }> = {
  reached: { background: 'rgba(46, 160, 67, 0.10)', border: 'rgba(46, 160, 67, 0.8)' },
  unreached: { background: 'rgba(219, 109, 40, 0.10)', border: 'rgba(219, 109, 40, 0.8)' },
  unknown: { background: 'rgba(128, 128, 128, 0.08)', border: 'rgba(128, 128, 128, 0.6)' },
};

/**
 * Colours each line of an opened changed file (alone, or the right side of its diff) by whether it reached E, writes `step N` after the
 * first line of each block a step wrote, and hovers with the writing command and a link that
 * selects that step in the run's debug session.
 */
export class AttributionDecorator implements vscode.Disposable {
  private readonly types = new Map<DecorationKind, vscode.TextEditorDecorationType>();
  private readonly cache = new Map<string, Promise<FileAttribution>>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly output: vscode.LogOutputChannel) {
    for (const kind of Object.keys(STYLES) as DecorationKind[]) {
      const s = STYLES[kind];
      this.types.set(kind, vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        backgroundColor: s.background,
        borderColor: s.border,
        borderStyle: 'solid',
        borderWidth: '0 0 0 3px',
        overviewRulerColor: s.border,
        overviewRulerLane: vscode.OverviewRulerLane.Left,
      }));
    }
    this.disposables.push(vscode.window.onDidChangeVisibleTextEditors((editors) => editors.forEach((e) => void this.decorate(e))));
    vscode.window.visibleTextEditors.forEach((e) => void this.decorate(e));
  }

  async decorate(editor: vscode.TextEditor): Promise<void> {
    if (editor.document.uri.scheme !== CONTAINER_SCHEME) return;
    const parsed = parseContainerUri(editor.document.uri);
    // The original side of a diff holds the image's lines: nothing on it was written by the run.
    if (!parsed || parsed.side === 'original') return;
    const trajectory = join(parsed.runDir, 'trajectory.jsonl');
    let attribution: FileAttribution;
    try {
      attribution = await this.attribution(trajectory, parsed.path);
    } catch (err) {
      this.output.warn(`No line attribution for ${parsed.path}: ${errorMessage(err)}`);
      return;
    }
    const byKind = new Map<DecorationKind, vscode.DecorationOptions[]>([...this.types.keys()].map((k) => [k, []]));
    for (const d of decorationModel(attribution, editor.document.lineCount)) {
      const hover = new vscode.MarkdownString(undefined, true);
      hover.isTrusted = { enabledCommands: ['tbrl.selectStep'] };
      hover.appendText(d.hover);
      const args = encodeURIComponent(JSON.stringify([{ trajectory, step: d.step }]));
      hover.appendMarkdown(`\n\n[Select step ${d.step} in the debugger](command:tbrl.selectStep?${args})`);
      byKind.get(d.kind)!.push({
        // The whole text of the line: a hover only shows where the mouse is inside the range.
        range: editor.document.lineAt(d.line).range,
        hoverMessage: hover,
        ...(d.afterText ? { renderOptions: { after: { contentText: d.afterText, color: new vscode.ThemeColor('editorCodeLens.foreground'), margin: '0 0 0 3em', fontStyle: 'italic' } } } : {}),
      });
    }
    for (const [kind, type] of this.types) editor.setDecorations(type, byKind.get(kind)!);
  }

  private attribution(trajectory: string, path: string): Promise<FileAttribution> {
    const key = `${trajectory}\n${path}`;
    let p = this.cache.get(key);
    if (!p) {
      p = readTrajectory(trajectory).then((t) => lineAttribution(t, path));
      // A failed read is retried next time the file is shown (the run may still be writing).
      p.catch(() => this.cache.delete(key));
      this.cache.set(key, p);
    }
    return p;
  }

  dispose(): void {
    this.types.forEach((t) => t.dispose());
    this.disposables.forEach((d) => d.dispose());
  }
}
