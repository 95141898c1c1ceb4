/**
 * Notifications in `seq` order: early ones wait, repeated ones are dropped, a gap that stays open
 * is skipped after a while (on the injected clock) and reported.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TaskNotification } from '../../src/protocol';
import { Sequencer } from '../../src/sequencer';
import { ManualClock } from './fake-vscode';

function out(taskId: string, seq: number): TaskNotification {
  return { kind: 'output', params: { taskId, seq, kind: 'assistant_delta', text: String(seq) } };
}

function setup() {
  const clock = new ManualClock();
  const delivered: string[] = [];
  const gaps: string[] = [];
  const sequencer = new Sequencer(
    clock,
    (note) => delivered.push(`${note.params.taskId}#${note.params.seq}`),
    (taskId) => gaps.push(taskId),
    2000,
  );
  return { clock, delivered, gaps, sequencer };
}

describe('sequencer', () => {
  it('delivers notifications in order as they come', () => {
    const { delivered, sequencer } = setup();
    for (const n of [1, 2, 3]) sequencer.push(out('a', n));
    assert.deepEqual(delivered, ['a#1', 'a#2', 'a#3']);
  });

  it('holds an early notification until the one before it came', () => {
    const { clock, delivered, gaps, sequencer } = setup();
    sequencer.push(out('a', 1));
    sequencer.push(out('a', 3));
    assert.deepEqual(delivered, ['a#1']);
    sequencer.push(out('a', 2));
    assert.deepEqual(delivered, ['a#1', 'a#2', 'a#3']);
    clock.advance(10_000);
    assert.deepEqual(gaps, []);
    assert.equal(clock.pending(), 0);
  });

  it('drops repeated and late notifications', () => {
    const { delivered, sequencer } = setup();
    sequencer.push(out('a', 1));
    sequencer.push(out('a', 2));
    sequencer.push(out('a', 2));
    sequencer.push(out('a', 1));
    assert.deepEqual(delivered, ['a#1', 'a#2']);
  });

  it('skips a gap that stays open and reports it', () => {
    const { clock, delivered, gaps, sequencer } = setup();
    sequencer.push(out('a', 1));
    sequencer.push(out('a', 4));
    sequencer.push(out('a', 5));
    clock.advance(1999);
    assert.deepEqual(delivered, ['a#1']);
    clock.advance(1);
    assert.deepEqual(delivered, ['a#1', 'a#4', 'a#5']);
    assert.deepEqual(gaps, ['a']);
    sequencer.push(out('a', 6));
    assert.deepEqual(delivered, ['a#1', 'a#4', 'a#5', 'a#6']);
  });

  it('numbers each task on its own; the first seen sets where a task starts', () => {
    const { delivered, sequencer } = setup();
    sequencer.push(out('a', 1));
    sequencer.push(out('b', 40));
    sequencer.push(out('a', 2));
    sequencer.push(out('b', 41));
    assert.deepEqual(delivered, ['a#1', 'b#40', 'a#2', 'b#41']);
  });

  it('starts afresh after a reset (a restarted server)', () => {
    const { clock, delivered, sequencer } = setup();
    sequencer.push(out('a', 1));
    sequencer.push(out('a', 3));
    sequencer.reset();
    assert.equal(clock.pending(), 0);
    sequencer.push(out('a', 1));
    assert.deepEqual(delivered, ['a#1', 'a#1']);
  });
});
