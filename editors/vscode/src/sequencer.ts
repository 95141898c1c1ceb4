/**
 * Puts a task's notifications (`rawko/status`, `rawko/countdown`, `rawko/output`,
 * `rawko/taskFinished`) in `seq` order. rawko numbers them per task from 1; a notification that
 * comes early waits for the ones before it, a repeated or late one is dropped, and a gap that is
 * still open after `gapMillis` is skipped (the waiting notifications are delivered) and reported,
 * so the caller can ask `rawko/getTask` for the whole picture.
 */
import type { Clock, Timer } from './clock';
import type { TaskNotification } from './protocol';

interface TaskQueue {
  /** The last `seq` delivered. */
  last: number;
  waiting: Map<number, TaskNotification>;
  gapTimer?: Timer;
}

export class Sequencer {
  private readonly tasks = new Map<string, TaskQueue>();

  constructor(
    private readonly clock: Clock,
    private readonly deliver: (note: TaskNotification) => void,
    private readonly onGap: (taskId: string) => void,
    private readonly gapMillis = 2000,
  ) {}

  push(note: TaskNotification): void {
    const { taskId, seq } = note.params;
    let queue = this.tasks.get(taskId);
    if (typeof seq !== 'number' || !Number.isFinite(seq)) {
      // Not numbered: nothing to order by.
      this.deliver(note);
      return;
    }
    if (!queue) {
      // The first notification seen of this task (a task started elsewhere, or before a
      // restart of the client) sets the baseline.
      queue = { last: seq - 1, waiting: new Map() };
      this.tasks.set(taskId, queue);
    }
    if (seq <= queue.last || queue.waiting.has(seq)) {
      return;
    }
    queue.waiting.set(seq, note);
    this.flush(queue);
    this.waitForGap(taskId, queue);
  }

  /** Forgets every task, e.g. when the server restarted and numbers anew. */
  reset(): void {
    for (const queue of this.tasks.values()) {
      queue.gapTimer?.cancel();
    }
    this.tasks.clear();
  }

  private flush(queue: TaskQueue): void {
    for (;;) {
      const next = queue.waiting.get(queue.last + 1);
      if (!next) {
        break;
      }
      queue.waiting.delete(queue.last + 1);
      queue.last += 1;
      this.deliver(next);
    }
    if (queue.waiting.size === 0 && queue.gapTimer) {
      queue.gapTimer.cancel();
      queue.gapTimer = undefined;
    }
  }

  /** While notifications wait for a missing one, skips the gap after `gapMillis`. */
  private waitForGap(taskId: string, queue: TaskQueue): void {
    if (queue.waiting.size > 0 && !queue.gapTimer) {
      queue.gapTimer = this.clock.setTimeout(() => {
        queue.gapTimer = undefined;
        this.skipGap(taskId, queue);
      }, this.gapMillis);
    }
  }

  private skipGap(taskId: string, queue: TaskQueue): void {
    if (queue.waiting.size === 0) {
      return;
    }
    queue.last = Math.min(...queue.waiting.keys()) - 1;
    this.flush(queue);
    this.onGap(taskId);
    this.waitForGap(taskId, queue);
  }
}
