// The web console: a developer signs in through the token service, then manages workspaces'
// databases over the public API, as any client would. Bundled by the API at its start.
import { render } from 'preact';
import { useState } from 'preact/hooks';
import { configureApi } from './api';
import { finishSignIn, readSettings, signedIn, signOut, startSignIn, type Settings } from './auth';
import { Workspaces } from './workspaces';

function SignIn({ settings, error }: { settings: Settings; error?: string }) {
  const [failure, setFailure] = useState(error);
  return (
    <main class="sign-in">
      <h1>Console</h1>
      <p>Sign in with your developer account at the token service.</p>
      <button type="button" onClick={() => startSignIn(settings).catch((caught: Error) => setFailure(caught.message))}>
        Sign in
      </button>
      {failure ? (
        <p class="error" role="alert">
          {failure}
        </p>
      ) : null}
    </main>
  );
}

function App({ settings, error }: { settings: Settings; error?: string }) {
  const [isSignedIn, setSignedIn] = useState(signedIn());
  configureApi(settings, () => setSignedIn(false));
  if (!isSignedIn) return <SignIn settings={settings} error={error} />;
  return (
    <Workspaces
      onSignOut={() => {
        void signOut(settings).finally(() => setSignedIn(false));
      }}
    />
  );
}

async function start(): Promise<void> {
  const root = document.getElementById('console');
  if (!root) return;
  const settings = readSettings(root);
  // The redirect URI is the public address: a sign-in started elsewhere could not come back to this tab's storage.
  const home = new URL(settings.redirectUri);
  if (location.origin !== home.origin && !location.search) {
    location.replace(home.href);
    return;
  }
  let error: string | undefined;
  try {
    await finishSignIn(settings);
  } catch (failure) {
    error = (failure as Error).message;
  }
  render(<App settings={settings} error={error} />, root);
}

void start();
