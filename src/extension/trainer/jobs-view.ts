import type { JobDetails } from '../../core/trainer/jobs';

/** Jobs Ray has not finished with: the Trainer view polls while one is shown, Stop Job offers only these. */
export function isActiveJob(job: Pick<JobDetails, 'status'>): boolean {
  return job.status === 'RUNNING' || job.status === 'PENDING';
}

/** Newest first, as the Trainer view and every job pick list them. */
export function newestFirst<T extends Pick<JobDetails, 'start_time'>>(jobs: readonly T[]): T[] {
  return [...jobs].sort((a, b) => (b.start_time ?? 0) - (a.start_time ?? 0));
}

/** The Trainer view row's description: status, then the start time in UTC minutes. */
export function jobDescription(job: Pick<JobDetails, 'status' | 'start_time'>): string {
  return `${job.status}${job.start_time ? ` · ${new Date(job.start_time).toISOString().slice(0, 16).replace('T', ' ')}` : ''}`;
}
