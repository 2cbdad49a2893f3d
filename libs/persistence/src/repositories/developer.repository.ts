import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Developer, DeveloperRepository } from '@platform/domain';
import { DeveloperEntity } from '../entities/developer.entity.js';
import { toDeveloper } from './mappers.js';

export class MikroDeveloperRepository implements DeveloperRepository {
  constructor(private readonly em: EntityManager) {}

  async findByEmail(email: string): Promise<Developer | null> {
    const rows = await this.em.execute<{ id: string }[]>('select id from developers where lower(email) = lower(?)', [email]);
    if (rows.length === 0) return null;
    return toDeveloper(await this.em.findOneOrFail(DeveloperEntity, rows[0].id));
  }

  async ensure(input: { email: string; name: string | null }): Promise<Developer> {
    await this.em.execute(
      'insert into developers (id, email, name, created) values (?, ?, ?, now()) on conflict do nothing',
      [randomUUID(), input.email, input.name],
    );
    const developer = await this.findByEmail(input.email);
    if (!developer) throw new Error(`developer ${input.email} vanished after insert`);
    return developer;
  }
}
