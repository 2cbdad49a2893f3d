/**
 * A clock that moves only when told to (in milliseconds). It has the shape of the domain's
 * `Clock` port without importing it, so that this library stays free of the domain.
 */
export class FakeClock {
  private current: number;

  constructor(start: Date | number = Date.now()) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(ms: number): void {
    this.current += ms;
  }
}
