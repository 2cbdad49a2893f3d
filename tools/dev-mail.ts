// The development mail catcher of `npm start`, and `npm run mail`, which prints what it caught.
// Without SMTP_URL, the platform's mail (password reset, email verification, invites) goes to a
// small SMTP server on loopback that writes each message as an .eml file in .data/mail, so that a
// reset link can be followed on a laptop. With SMTP_URL set, nothing here runs.
//
//   npm run mail            the latest mail: its headers, its text and its links
//   npm run mail -- --list  every caught mail, newest first
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readPort, type Env } from '@platform/config';
import { MailCatcher, readMail } from '@platform/mail';
import { localStateDir } from './local-state.js';

/** Beside the apps' 4100-4103; taken, the catcher takes any free port and says which. */
export const DEFAULT_MAIL_CATCHER_PORT = 4104;

/** Where caught mail is written: .data/mail (beside the embedded PostgreSQL's folder). */
export function mailDir(env: Env, cwd = process.cwd()): string {
  return join(localStateDir(env, cwd), 'mail');
}

/**
 * Starts the catcher when SMTP_URL is unset and answers it with the environment that sends the
 * apps' mail to it; with SMTP_URL set, null and the environment unchanged.
 */
export async function provideMailCatcher(env: Env): Promise<{ env: Env; catcher: MailCatcher | null; dir: string }> {
  const dir = mailDir(env);
  if (env.SMTP_URL?.trim()) return { env, catcher: null, dir };
  const port = readPort(env, 'MAIL_CATCHER_PORT', DEFAULT_MAIL_CATCHER_PORT);
  let catcher: MailCatcher;
  try {
    catcher = await MailCatcher.start({ port, dir });
  } catch (error) {
    // Only the default gives way: a port asked for by name is a promise to whoever asked.
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || env.MAIL_CATCHER_PORT) throw new Error(`the mail catcher could not listen on 127.0.0.1:${port}: ${(error as Error).message}`);
    catcher = await MailCatcher.start({ port: 0, dir });
  }
  return { env: { ...env, SMTP_URL: catcher.url }, catcher, dir };
}

/** The caught mails' files, newest first (their names start with the time they came). */
export function caughtMailFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.eml'))
    .sort()
    .reverse()
    .map((name) => join(dir, name));
}

/** A caught mail as `npm run mail` prints it. */
export function showMail(raw: string, file: string): string {
  const mail = readMail(raw);
  const header = (name: string) => (mail.headers[name] ? `${name[0].toUpperCase()}${name.slice(1)}: ${mail.headers[name]}\n` : '');
  const links = mail.links.length > 0 ? `\nLinks:\n${mail.links.map((link) => `  ${link}`).join('\n')}\n` : '';
  return `${file}\n${header('date')}${header('from')}${header('to')}${header('subject')}\n${mail.text.trimEnd()}\n${links}`;
}

function main(): void {
  const env = process.env;
  const dir = mailDir(env);
  const files = caughtMailFiles(dir);
  if (env.SMTP_URL) console.error(`SMTP_URL is set: the platform sends real mail, and only mail caught earlier is in ${dir}.`);
  if (files.length === 0) {
    console.log(`No mail caught yet in ${dir}. Under \`npm start\` without SMTP_URL, the platform's mail lands there.`);
    return;
  }
  if (process.argv.includes('--list')) {
    for (const file of files) console.log(`${file}  ${readMail(readFileSync(file, 'utf8')).subject}`);
    return;
  }
  console.log(showMail(readFileSync(files[0], 'utf8'), files[0]));
}

if (import.meta.url === `file://${process.argv[1]}`) main();
