// Small helpers every panel shares: loading (and polling) a resource, running an action with its
// error shown, and the bits of markup that repeat.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

export interface Resource<T> {
  data: T | undefined;
  error: string | undefined;
  reload: () => void;
}

/** Loads with `load` when `key` changes, again on reload, and every `pollMs(data)` ms when that is a number. */
export function useResource<T>(load: () => Promise<T>, key: string, pollMs?: (data: T | undefined) => number | undefined): Resource<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    setData(undefined);
    setError(undefined);
  }, [key]);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    loadRef.current().then(
      (value) => {
        if (!live) return;
        setData(value);
        setError(undefined);
        const every = pollMs?.(value);
        if (every !== undefined) timer = setTimeout(() => setTick((n) => n + 1), every);
      },
      (failure: unknown) => {
        if (live) setError(messageOf(failure));
      },
    );
    return () => {
      live = false;
      if (timer) clearTimeout(timer);
    };
    // pollMs is read at each load; only the key and reloads start one.
  }, [key, tick]);
  return { data, error, reload: useCallback(() => setTick((n) => n + 1), []) };
}

export function messageOf(failure: unknown): string {
  if (failure instanceof ApiError) return `${failure.message} (${failure.status} ${failure.code})`;
  return failure instanceof Error ? failure.message : String(failure);
}

/** Runs an action, keeping its error to show and whether it is under way. */
export function useAction(): { busy: boolean; error: string | undefined; run: (action: () => Promise<unknown>) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const run = useCallback(async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      return true;
    } catch (failure) {
      setError(messageOf(failure));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(undefined) };
}

export function ErrorLine({ error }: { error: string | undefined }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}

export function Status({ value }: { value: string }) {
  return <span class={`status status-${value.toLowerCase()}`}>{value}</span>;
}

export function Panel({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section class="panel" aria-label={title}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

/** A value shown once, with a button that copies it. */
export function Copyable({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await navigator.clipboard?.writeText(value).catch(() => undefined);
    setCopied(true);
  };
  return (
    <div class="copyable">
      <label>
        {label}
        <input readOnly value={value} aria-label={label} onFocus={(event) => (event.currentTarget as HTMLInputElement).select()} />
      </label>
      <button type="button" onClick={copy}>
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

/** Reads a form's fields by name. */
export function fieldsOf(event: Event): Record<string, string> {
  event.preventDefault();
  const form = event.currentTarget as HTMLFormElement;
  return Object.fromEntries([...new FormData(form).entries()].map(([name, value]) => [name, String(value).trim()]));
}
