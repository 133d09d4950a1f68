/** The parts of `scan --json` the integration tests read. */
export interface ScanTaskJson {
  id: number | string;
  bizType: string | null;
  bizId: string | null;
  eventId: string | null;
  status: string;
  attempts: number | null;
  nextRetryAt: string | null;
  lastError: string | null;
  createdAt: string | null;
  updatedAt: string | null;
  queue?: string | null;
  connection?: string | null;
  maxAttempts?: number | null;
}

export interface ScanJson {
  now: string;
  summary: {
    total: number;
    byStatus: Record<string, number>;
    stuck: number | null;
    due: number | null;
    oldestDueSeconds: number | null;
  };
  byBizType: Array<{ bizType: string | null; total: number; due: number | null; stuck: number | null }>;
  stuck: ScanTaskJson[];
  due: ScanTaskJson[];
  failed: ScanTaskJson[];
  notes: string[];
}

/** One number from a ground-truth aggregate row (drivers return SUM() as a string). */
export const num = (value: unknown): number => Number(value ?? 0);
