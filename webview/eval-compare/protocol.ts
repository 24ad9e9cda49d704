import { notification, request } from '../shared/ipc';
import type { MatrixView } from './matrix';

export type { MatrixView, MatrixRow, MatrixCell, SortBy } from './matrix';

/** Webview → extension: the tasks × jobs matrix (asked on load and after the panel is shown again). */
export const GetComparison = request<void, MatrixView>('evalCompare/get');
/**
 * Webview → extension: a cell was clicked; open that task's trial of job `job` in the replay
 * debugger (its first trial, or a quick pick of them when `pick`). The reply names what opened.
 */
export const OpenTrial = request<{ job: number; task: string; pick: boolean }, { opened: string | null; reason?: string }>('evalCompare/openTrial');
/** Extension → webview: a compared job changed on disk (a running job finished a trial). */
export const ComparisonChanged = notification<{ view: MatrixView }>('evalCompare/changed');
