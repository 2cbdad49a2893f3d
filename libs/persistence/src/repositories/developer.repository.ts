import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, type Developer, type DeveloperRepository } from '@platform/domain';
import { DeveloperEntity } from '../entities/developer.entity.js';
import { isUniqueViolation } from '../errors.js';
import { toDeveloper } from './mappers.js';

interface DeveloperSqlRow {
  id: string;
  email: string;
  name: string | null;
  created: Date | string;
  password_hash: string | null;
}

function fromSql(row: DeveloperSqlRow): Developer {
  return { id: row.id, email: row.email, name: row.name, created: new Date(row.created) };
}

export class MikroDeveloperRepository implements DeveloperRepository {
  constructor(private readonly em: EntityManager) {}

  async findByEmail(email: string): Promise<Developer | null> {
    const rows = await this.em.execute<{ id: string }[]>('select id from developers where lower(email) = lower(?)', [email]);
    if (rows.length === 0) return null;
    return toDeveloper(await this.em.findOneOrFail(DeveloperEntity, rows[0].id));
  }

  async findById(id: string): Promise<Developer | null> {
    const row = await this.em.findOne(DeveloperEntity, id);
    return row ? toDeveloper(row) : null;
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

  async createWithPassword(input: { email: string; name: string | null; passwordHash: string }): Promise<Developer> {
    try {
      const rows = await this.em.execute<DeveloperSqlRow[]>(
        'insert into developers (id, email, name, created, password_hash) values (?, ?, ?, now(), ?) returning *',
        [randomUUID(), input.email, input.name, input.passwordHash],
      );
      return fromSql(rows[0]);
    } catch (error) {
      if (isUniqueViolation(error, 'developers_email_unique')) {
        throw new ConflictError('developer_exists', 'An account with this email already exists; sign in instead', { cause: error });
      }
      throw error;
    }
  }

  async findCredentials(email: string): Promise<{ developer: Developer; passwordHash: string | null } | null> {
    const rows = await this.em.execute<DeveloperSqlRow[]>('select * from developers where lower(email) = lower(?)', [email]);
    return rows.length === 0 ? null : { developer: fromSql(rows[0]), passwordHash: rows[0].password_hash };
  }

  async setPasswordHash(id: string, passwordHash: string): Promise<void> {
    await this.em.execute('update developers set password_hash = ? where id = ?', [passwordHash, id]);
  }
}
