import { expect } from 'chai';
import type { ComputeInstanceStatus, ComputeTask } from './compute-instances.js';
import { nextComputeStep, type ComputeStep } from './compute-step.js';
import { DEFAULT_COMPUTE_TYPES } from './compute-types.js';

const [SMALL, MEDIUM] = DEFAULT_COMPUTE_TYPES;
const NOW = new Date('2025-01-01T12:00:00Z');
const PAST = new Date(NOW.getTime() - 1);
const FUTURE = new Date(NOW.getTime() + 1);
const ON_INSTANCE = { host: '127.0.0.1', port: 54321 };

/** Where an instance stands, in the few words the rules read. */
interface Situation {
  status: ComputeInstanceStatus;
  resize?: boolean;
  databasePurged?: boolean;
  onInstance?: boolean;
  dropAfter?: Date;
  attempts?: number;
}

function task(s: Situation): ComputeTask {
  return {
    instance: {
      id: 'i1',
      databaseId: 'd1',
      name: 'one',
      instanceType: SMALL,
      desiredInstanceType: s.resize ? MEDIUM : SMALL,
      status: s.status,
      failure: null,
      health: null,
      created: NOW,
      updated: NOW,
      deleted: null,
    },
    database: { id: 'd1', physicalName: 'db_d1', region: 'AWS_US_WEST_2', purged: s.databasePurged ?? false, server: s.onInstance ? ON_INSTANCE : null },
    server: ON_INSTANCE,
    pendingDrop: s.dropAfter ? 'cluster' : null,
    dropAfter: s.dropAfter ?? null,
    attempts: s.attempts ?? 0,
  };
}

const CASES: [string, Situation, ComputeStep][] = [
  ['a new instance commits PROVISIONING first', { status: 'PENDING' }, { kind: 'advance', to: 'PROVISIONING' }],
  ['provisioning moves the database in', { status: 'PROVISIONING' }, { kind: 'move-in', onFailure: 'retry' }],
  ['provisioning retries after one failure', { status: 'PROVISIONING', attempts: 1 }, { kind: 'move-in', onFailure: 'retry' }],
  ['the third attempt at provisioning gives up if it fails', { status: 'PROVISIONING', attempts: 2 }, { kind: 'move-in', onFailure: 'give-up' }],
  ['a ready instance of the desired type has nothing to do', { status: 'READY', onInstance: true }, { kind: 'nothing' }],
  ['a ready instance of another type commits RESIZING first', { status: 'READY', onInstance: true, resize: true }, { kind: 'advance', to: 'RESIZING' }],
  ['resizing restarts the server', { status: 'RESIZING', onInstance: true, resize: true }, { kind: 'resize', onFailure: 'retry' }],
  ['the third attempt at a resize gives up if it fails', { status: 'RESIZING', onInstance: true, resize: true, attempts: 2 }, { kind: 'resize', onFailure: 'give-up' }],
  ['deleting an instance that serves the database moves it back', { status: 'DELETING', onInstance: true }, { kind: 'move-back' }],
  ['deleting once the database is back removes the server', { status: 'DELETING' }, { kind: 'remove', databaseLives: true }],
  ['a purged database takes its ready instance with it', { status: 'READY', onInstance: true, databasePurged: true }, { kind: 'remove', databaseLives: false }],
  ['a purged database takes a provisioning instance with it', { status: 'PROVISIONING', databasePurged: true }, { kind: 'remove', databaseLives: false }],
  ['deleting comes before a due drop of the old copy', { status: 'DELETING', onInstance: true, dropAfter: PAST }, { kind: 'move-back' }],
  ['the old copy goes once its grace has passed', { status: 'READY', onInstance: true, dropAfter: PAST }, { kind: 'drop-old-copy' }],
  ['the old copy goes at the end of its grace exactly', { status: 'READY', onInstance: true, dropAfter: NOW }, { kind: 'drop-old-copy' }],
  ['the old copy waits out its grace', { status: 'READY', onInstance: true, dropAfter: FUTURE }, { kind: 'nothing' }],
  ['a due drop comes before a resize', { status: 'READY', onInstance: true, resize: true, dropAfter: PAST }, { kind: 'drop-old-copy' }],
  ['a failed instance waits for its delete', { status: 'FAILED', resize: true }, { kind: 'nothing' }],
  ['a failed instance still drops a due old copy', { status: 'FAILED', dropAfter: PAST }, { kind: 'drop-old-copy' }],
  ['a terminated instance has nothing to do', { status: 'TERMINATED' }, { kind: 'nothing' }],
];

describe('nextComputeStep', () => {
  for (const [name, situation, step] of CASES) {
    it(name, () => {
      expect(nextComputeStep(task(situation), NOW)).to.deep.equal(step);
    });
  }

  it('gives up after as many attempts as it is told', () => {
    expect(nextComputeStep(task({ status: 'PROVISIONING', attempts: 0 }), NOW, 1)).to.deep.equal({ kind: 'move-in', onFailure: 'give-up' });
    expect(nextComputeStep(task({ status: 'RESIZING', attempts: 3 }), NOW, 5)).to.deep.equal({ kind: 'resize', onFailure: 'retry' });
  });
});
