import { EMAIL_MAX_LENGTH, PERSON_NAME_MAX_LENGTH, type LoginResult, type User } from '@platform/domain';
import { arrayOf, dateTime, int, nullable, oneOf, record, respond, text, uuid } from '@platform/http';
import { PICTURE_URL_MAX_LENGTH } from './request-fields.js';
import { sessionCookieHeader, type SessionCookie } from './session-cookie.js';

const userFields = {
  id: uuid(),
  email: text({ max: EMAIL_MAX_LENGTH }),
  name: nullable(text({ max: PERSON_NAME_MAX_LENGTH })),
  givenName: nullable(text({ max: PERSON_NAME_MAX_LENGTH })),
  familyName: nullable(text({ max: PERSON_NAME_MAX_LENGTH })),
  picture: nullable(text({ max: PICTURE_URL_MAX_LENGTH })),
  created: dateTime(),
  emailVerified: nullable(dateTime()),
  updated: dateTime(),
};
const tenantIds = arrayOf(uuid(), 'Ids of the user’s tenants');

export const UserSchema = record(userFields, 'A user of the database');

export function presentUser(user: User) {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    givenName: user.givenName,
    familyName: user.familyName,
    picture: user.picture,
    created: user.created.toISOString(),
    emailVerified: user.emailVerified?.toISOString() ?? null,
    updated: user.updated.toISOString(),
  };
}

export const CurrentUserSchema = record({ ...userFields, tenants: tenantIds }, 'The signed-in user with their tenants');

export function presentCurrentUser({ user, tenantIds }: { user: User; tenantIds: string[] }) {
  return { ...presentUser(user), tenants: tenantIds };
}

export const SignedInUserSchema = record(
  {
    id: uuid('The user id'),
    tenants: tenantIds,
    token: record({ jwt: text({ max: 4096 }), maxAge: int('Seconds'), type: oneOf(['ACCESS_TOKEN']) }),
  },
  'A signed-in user. The response also sets the session cookie.',
);

/** The signed-in user, their token and the session cookie; never cached. */
export function presentSignedIn(result: LoginResult, cookie: SessionCookie, status: number) {
  return respond({
    status,
    body: { id: result.user.id, tenants: result.tenantIds, token: result.token },
    headers: { 'Set-Cookie': sessionCookieHeader(cookie, result.session.token, result.session.maxAge), 'Cache-Control': 'no-store' },
  });
}
