import { notification, request } from '../shared/ipc';
import type { ChartView } from './series';

export type { ChartView } from './series';

export interface JobView {
  submissionId: string;
  status: string;
  message?: string;
  entrypoint?: string;
  startTime?: number;
  endTime?: number;
  metadata?: Record<string, string>;
}

export interface DashboardPayload {
  job: JobView;
  charts: ChartView[];
  /** The last part of the log (the panel keeps a bounded tail, not the whole job log). */
  log: string;
  /** Why the live tail is not running, if it is not (connection lost, job finished). */
  tailState: string;
}

/** Webview → extension: everything to draw (asked on load and after the panel is shown again). */
export const GetDashboard = request<void, DashboardPayload>('trainerDashboard/get');
/** Extension → webview: the job's status changed (polling). */
export const JobChanged = notification<{ job: JobView; tailState: string }>('trainerDashboard/job');
/** Extension → webview: new log text from the live tail. */
export const LogAppended = notification<{ text: string }>('trainerDashboard/log');
/** Extension → webview: the metric series grew. */
export const ChartsChanged = notification<{ charts: ChartView[] }>('trainerDashboard/charts');
