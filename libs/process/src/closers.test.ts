import { expect } from 'chai';
import { Closers, startWithClosers } from './closers.js';

function recording() {
  const logged: { closer: unknown; message: string }[] = [];
  return { logged, log: { error: (details: { closer?: unknown }, message: string) => void logged.push({ closer: details.closer, message }) } };
}

describe('Closers', () => {
  it('closes last opened first, once, however often close is called', async () => {
    const { log } = recording();
    const closed: string[] = [];
    const closers = new Closers(log);
    closers.push('orm', async () => void closed.push('orm'));
    closers.push('loop', () => void closed.push('loop'));
    closers.push('server', async () => void closed.push('server'));
    await Promise.all([closers.close(), closers.close()]);
    await closers.close();
    expect(closed).to.deep.equal(['server', 'loop', 'orm']);
  });

  it('goes on past a failing closer, logs it by name, and throws its error at the end', async () => {
    const { log, logged } = recording();
    const closed: string[] = [];
    const closers = new Closers(log);
    const failure = new Error('pool busy');
    closers.push('orm', () => void closed.push('orm'));
    closers.push('pool', () => Promise.reject(failure));
    closers.push('server', () => void closed.push('server'));
    const thrown = await closers.close().then(
      () => null,
      (error: unknown) => error,
    );
    expect(thrown).to.equal(failure);
    expect(closed).to.deep.equal(['server', 'orm']);
    expect(logged).to.deep.equal([{ closer: 'pool', message: 'closing failed; closing the rest' }]);
  });

  it('throws an AggregateError when several fail', async () => {
    const closers = new Closers(recording().log);
    closers.push('a', () => {
      throw new Error('a failed');
    });
    closers.push('b', () => Promise.reject(new Error('b failed')));
    const thrown = await closers.close().catch((error: unknown) => error);
    expect(thrown).to.be.instanceOf(AggregateError);
    expect((thrown as AggregateError).errors.map((error: Error) => error.message)).to.deep.equal(['b failed', 'a failed']);
  });

  it('refuses what is opened once closing has begun', async () => {
    const closers = new Closers(recording().log);
    await closers.close();
    expect(() => closers.push('late', () => {})).to.throw('"late" was opened after closing began');
  });
});

describe('startWithClosers', () => {
  it('closes what a failing start opened, last first, and throws the start’s error', async () => {
    const { log, logged } = recording();
    const closed: string[] = [];
    const failure = new Error('key ring cannot open the key in use');
    const thrown = await startWithClosers(log, async (closers) => {
      closers.push('orm', () => void closed.push('orm'));
      closers.push('listener', () => {
        closed.push('listener');
        throw new Error('already gone');
      });
      throw failure;
    }).catch((error: unknown) => error);
    expect(thrown).to.equal(failure);
    expect(closed).to.deep.equal(['listener', 'orm']);
    expect(logged.map((entry) => entry.closer)).to.deep.equal(['listener']);
  });

  it('answers what a start returns and closes nothing', async () => {
    let closed = false;
    const started = await startWithClosers(recording().log, async (closers) => {
      closers.push('orm', () => void (closed = true));
      return { close: () => closers.close() };
    });
    expect(closed).to.equal(false);
    await started.close();
    expect(closed).to.equal(true);
  });
});
