import type { MailMessage } from '../mail.js';

// The mails the platform sends to a database's users. Plain text: each link on a line of its own.

function minutes(seconds: number): string {
  if (seconds % 86_400 === 0) return seconds === 86_400 ? '24 hours' : `${seconds / 86_400} days`;
  if (seconds % 3600 === 0) return seconds === 3600 ? '1 hour' : `${seconds / 3600} hours`;
  return `${Math.max(1, Math.round(seconds / 60))} minutes`;
}

export function passwordResetMail(to: string, link: string, ttlSeconds: number): MailMessage {
  return {
    to,
    subject: 'Reset your password',
    text: `Someone asked to reset the password of the account of ${to}.

To choose a new password, open this link within ${minutes(ttlSeconds)}:

${link}

It works once. If you did not ask for this, ignore this mail: your password stays as it is.
`,
  };
}

export function emailVerificationMail(to: string, link: string, ttlSeconds: number): MailMessage {
  return {
    to,
    subject: 'Verify your email address',
    text: `To confirm that ${to} is your address, open this link within ${minutes(ttlSeconds)}:

${link}

If you did not ask for this, ignore this mail.
`,
  };
}

export function inviteMail(to: string, link: string, ttlSeconds: number, invitedBy: string, tenantName: string | null): MailMessage {
  const tenant = tenantName ? `"${tenantName}"` : 'their team';
  return {
    to,
    subject: tenantName ? `You are invited to join ${tenantName}` : 'You are invited to join a team',
    text: `${invitedBy} invited ${to} to join ${tenant}.

To accept, open this link within ${minutes(ttlSeconds)}:

${link}

It works once. If you do not know ${invitedBy}, ignore this mail.
`,
  };
}

/** To the owner of an address someone tried to sign up with: no link, nothing to click. */
export function accountExistsMail(to: string): MailMessage {
  return {
    to,
    subject: 'Someone tried to sign up with your address',
    text: `Someone tried to create an account for ${to}, which has an account already.

If it was you, sign in with your password instead, or use "forgot password" if you do not remember it.
If it was not you, ignore this mail: nothing changed.
`,
  };
}
