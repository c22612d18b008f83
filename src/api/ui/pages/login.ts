import { html } from '../html.js';
import type { Page } from '../layout.js';

/** Signing in: the API token, entered once, kept for the browser session. */
export function loginPage(options: { next: string; open: boolean; refused?: boolean }): Page {
  return {
    title: 'Sign in',
    section: 'none',
    body: html`<h1>Sign in</h1>
      ${
        options.open
          ? html`<p class="notice">This server's API needs no token: <a href="${options.next}">go on</a>.</p>`
          : html`<p class="lead">
                The dashboard reads the same data as the API and asks for the same token (a static token or a JWT). Signing in opens a
                session: this browser keeps its id, not the token, until you sign out, leave it unused for a while or close the browser.
              </p>
              ${options.refused ? html`<p class="notice error" role="alert">That token was refused: it is unknown, badly signed, expired or issued in the future.</p>` : ''}
              <form method="post" action="/ui/login" class="filters">
                <input type="hidden" name="next" value="${options.next}" />
                <label for="token"
                  >API token
                  <input
                    id="token"
                    name="token"
                    type="password"
                    autocomplete="current-password"
                    required
                    size="40"
                    ${options.refused ? html` aria-invalid="true"` : ''}
                /></label>
                <button type="submit">Sign in</button>
              </form>`
      }`,
  };
}
