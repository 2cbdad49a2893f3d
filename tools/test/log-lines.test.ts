import { expect } from 'chai';
import { prettyLogLine } from '../log-lines.js';

const AT = Date.UTC(2026, 10, 28, 12, 0, 1, 234);

describe('prettyLogLine', function () {
  it('writes a request as one short line: time, level, app, method, path, status, duration', function () {
    const line = JSON.stringify({ level: 30, time: AT, pid: 1, hostname: 'vm', name: 'api', requestId: 'r-1', method: 'GET', path: '/workspaces', status: 200, ms: 4.1, msg: 'request' });
    expect(prettyLogLine(line)).to.equal('12:00:01.234 INFO  api     request GET /workspaces 200 4.1ms');
  });

  it('keeps the other fields as key=value, quoting what has spaces', function () {
    const line = JSON.stringify({ level: 40, time: AT, name: 'gateway', host: '127.0.0.1', port: 4104, reason: 'no space left', msg: 'gateway listening' });
    expect(prettyLogLine(line)).to.equal('12:00:01.234 WARN  gateway gateway listening host=127.0.0.1 port=4104 reason="no space left"');
  });

  it('colours warnings and errors only when asked, and puts an error’s stack below it', function () {
    const line = JSON.stringify({ level: 50, time: AT, name: 'api', msg: 'step failed', err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at step (x.ts:1:1)' } });
    expect(prettyLogLine(line)).to.equal('12:00:01.234 ERROR api     step failed err=boom\n    Error: boom\n        at step (x.ts:1:1)');
    expect(prettyLogLine(line, { colour: true })).to.match(/^12:00:01\.234 \u001b\[31mERROR\u001b\[0m api/);
  });

  it('passes anything that is not a pino line as it is', function () {
    for (const line of ['applied migrations: one, two', '{"not":"pino"}', '[1,2]', '', 'null']) expect(prettyLogLine(line)).to.equal(line);
  });
});
