/** Partition labels: ISO days or hours, so string order is time order. */
export const day = (i: number) => new Date(Date.UTC(2026, 2, 1 + i)).toISOString().slice(0, 10);
export const hour = (i: number) => new Date(Date.UTC(2026, 2, 1, i)).toISOString().slice(0, 13);
