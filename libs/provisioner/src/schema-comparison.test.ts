import { expect } from 'chai';
import { assertSameSchema, comparable } from './schema-comparison.js';

const SOURCE = [
  '--',
  '-- PostgreSQL database dump',
  '--',
  '\\restrict AbCdEf123',
  '',
  'CREATE TABLE public.orders (',
  '    id integer NOT NULL',
  ');',
  'ALTER TABLE public.orders FORCE ROW LEVEL SECURITY;',
  '\\unrestrict AbCdEf123',
].join('\n');

describe('schema comparison', () => {
  it('keeps the SQL and leaves out comments, blank lines and the restrict key', () => {
    expect(comparable(SOURCE)).to.deep.equal(['CREATE TABLE public.orders (', '    id integer NOT NULL', ');', 'ALTER TABLE public.orders FORCE ROW LEVEL SECURITY;']);
  });

  it('accepts a copy that differs only in what a second dump changes', () => {
    const copy = SOURCE.replaceAll('AbCdEf123', 'ZyXw987').replace('-- PostgreSQL database dump', '-- Dumped by pg_dump version 18.1') + '\n\n';
    expect(() => assertSameSchema(SOURCE, copy)).not.to.throw();
  });

  it('takes a policy’s roles as a set: pg_dump lists them in the order of the server’s catalog', () => {
    const policy = (roles: string) => `${SOURCE}\nCREATE POLICY p ON public.orders AS RESTRICTIVE FOR SELECT TO ${roles} USING ((id = ( SELECT 1)));`;
    expect(() => assertSameSchema(policy('db_a_tenant, db_a_scoped'), policy('db_a_scoped, db_a_tenant'))).not.to.throw();
    expect(comparable(policy('db_a_tenant, db_a_scoped')).at(-1)).to.equal('CREATE POLICY p ON public.orders AS RESTRICTIVE FOR SELECT TO db_a_scoped, db_a_tenant USING ((id = ( SELECT 1)));');
    expect(() => assertSameSchema(policy('db_a_tenant, db_a_scoped'), policy('db_a_scoped, db_a_owner'))).to.throw('at line 5');
  });

  it('refuses a changed line and shows it as each side has it', () => {
    const weakened = SOURCE.replace('FORCE ROW LEVEL SECURITY', 'NO FORCE ROW LEVEL SECURITY');
    expect(() => assertSameSchema(SOURCE, weakened)).to.throw(
      "at line 4, the source has 'ALTER TABLE public.orders FORCE ROW LEVEL SECURITY;', the copy 'ALTER TABLE public.orders NO FORCE ROW LEVEL SECURITY;'",
    );
  });

  it('refuses a copy with a line missing or a line more', () => {
    const missing = SOURCE.replace('ALTER TABLE public.orders FORCE ROW LEVEL SECURITY;\n', '');
    expect(() => assertSameSchema(SOURCE, missing)).to.throw("at line 4, the source has 'ALTER TABLE public.orders FORCE ROW LEVEL SECURITY;', the copy nothing");
    const extra = `${SOURCE}\nALTER FUNCTION public.f() SECURITY DEFINER;`;
    expect(() => assertSameSchema(SOURCE, extra)).to.throw("at line 5, the source has nothing, the copy 'ALTER FUNCTION public.f() SECURITY DEFINER;'");
  });

  it('does not take a line that only starts like a comment or a restrict key for one', () => {
    expect(comparable(' -- indented\n\\restricted x\nSELECT 1;')).to.deep.equal([' -- indented', '\\restricted x', 'SELECT 1;']);
  });
});
