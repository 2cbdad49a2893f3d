import * as scryptModule from 'scrypt-kdf';
import type { PasswordHasher } from '@platform/domain';

// scrypt-kdf's typings declare named exports, but its JavaScript has only a default export.
const Scrypt = (scryptModule as unknown as { default: typeof scryptModule }).default;

/**
 * scrypt (scrypt-kdf) with an explicit cost: logN 15 is about 150 ms a hash on our 2-core
 * machines. The parameters travel inside each hash, so raising the cost later keeps old hashes valid.
 */
export class ScryptPasswordHasher implements PasswordHasher {
  private dummy: Promise<Uint8Array> | null = null;

  constructor(private readonly logN = 15) {
    if (!Number.isInteger(logN) || logN < 1 || logN > 20) throw new Error(`scrypt logN ${logN} is out of range`);
  }

  async hash(password: string): Promise<string> {
    const key = await Scrypt.kdf(password, { logN: this.logN, r: 8, p: 1 });
    return Buffer.from(key).toString('base64');
  }

  async verify(password: string, hash: string): Promise<boolean> {
    try {
      return await Scrypt.verify(Buffer.from(hash, 'base64'), password);
    } catch {
      return false;
    }
  }

  async verifyNothing(password: string): Promise<false> {
    // A hash of a random value with the same cost: verifying against it takes as long as a real one.
    this.dummy ??= Scrypt.kdf(crypto.randomUUID(), { logN: this.logN, r: 8, p: 1 });
    await Scrypt.verify(await this.dummy, password);
    return false;
  }
}
