export { createScheduler } from './create-scheduler.js';
export type { SchedulerOptions } from './scheduler-options.js';
