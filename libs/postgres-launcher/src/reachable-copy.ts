import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { whyNotOurs } from './reachable-folder.js';

/** Written last into a copy: the list of its files, all of which a usable copy still has. */
const MANIFEST = '.complete';
/** A copy still in progress after this long was abandoned by a killed start. */
const ABANDONED_AFTER_MS = 10 * 60_000;

/**
 * Makes `copy` a finished copy of `original` (a folder) unless it already is one: made once by
 * whichever start comes first, writable by us alone and readable by all, finished by a list of its
 * files written last. A copy missing any of them is set aside and made again; partial copies a
 * killed start left are removed after ABANDONED_AFTER_MS; anything in the way that is not ours alone
 * is refused with a message that calls the copy `what`.
 */
export function ensureCopy(original: string, copy: string, what: string): void {
  if (isComplete(copy)) return;
  removeAbandonedCopies(copy);
  setAsideIncomplete(copy, what);
  copyOnce(original, copy);
}

/** Ours, finished, and not thinned out since by the machine's temporary-file cleaning. */
function isComplete(copy: string): boolean {
  if (whyNotOurs(copy) !== null || !existsSync(join(copy, MANIFEST))) return false;
  const files = readFileSync(join(copy, MANIFEST), 'utf8').split('\n').filter(Boolean);
  return files.length > 0 && files.every((file) => existsSync(join(copy, file)) || isSymbolicLink(join(copy, file)));
}

function isSymbolicLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * A copy of ours that is unfinished or thinned out is renamed aside before it is removed, so that
 * a copy another start has just renamed into place is never the one removed. Anything else in
 * the way is not ours to delete.
 */
function setAsideIncomplete(copy: string, what: string): void {
  if (!existsSync(copy) && !isSymbolicLink(copy)) return;
  const why = whyNotOurs(copy);
  if (why) throw new Error(`${copy} is in the way of ${what} and is not safe to use (${why}): remove it and start again`);
  const aside = `${copy}.partial-aside-${process.pid}-${Date.now()}`;
  try {
    renameSync(copy, aside);
  } catch {
    return; // another start set it aside first
  }
  if (isComplete(aside)) renameBack(aside, copy);
  else rmSync(aside, { recursive: true, force: true });
}

function renameBack(aside: string, copy: string): void {
  try {
    renameSync(aside, copy);
  } catch {
    // Another complete copy is in place; this one is left for removeAbandonedCopies.
  }
}

/** Partial copies a killed start left behind (ours only, and untouched for ABANDONED_AFTER_MS). */
function removeAbandonedCopies(copy: string): void {
  const folder = dirname(copy);
  if (!existsSync(folder)) return;
  for (const name of readdirSync(folder)) {
    if (!name.startsWith(`${basename(copy)}.partial-`)) continue;
    const path = join(folder, name);
    if (whyNotOurs(path) === null && Date.now() - lstatSync(path).mtimeMs > ABANDONED_AFTER_MS) rmSync(path, { recursive: true, force: true });
  }
}

/** Copies into a private folder first and renames it into place, so that concurrent starts never see half a copy. */
function copyOnce(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  const partial = mkdtempSync(`${to}.partial-`);
  try {
    cpSync(from, partial, { recursive: true, verbatimSymlinks: true });
    // The server runs these with our data: only we may change them, whatever the original's modes;
    // and its account must read them, even when they were made under a private umask.
    const files = fitModes(partial);
    chmodSync(partial, 0o755);
    writeFileSync(join(partial, MANIFEST), `${files.join('\n')}\n`, { mode: 0o644 });
    renameSync(partial, to);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    // Another start finished the same copy first.
    if (!isComplete(to)) throw error;
  }
}

/** `chmod -R go-w,a+rX` that leaves symbolic links (and what they point at) alone; answers every path below `root`. */
function fitModes(root: string): string[] {
  const paths: string[] = [];
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    paths.push(relative(root, path));
    if (entry.isSymbolicLink()) continue;
    const mode = lstatSync(path).mode;
    chmodSync(path, (mode & 0o7755) | (entry.isDirectory() || (mode & 0o111) !== 0 ? 0o555 : 0o444));
  }
  return paths.sort();
}
