import { Html, html } from './html.js';

/** The sections of the navigation; a page names the one it belongs to. */
export type Section = 'images' | 'changes' | 'feeds' | 'vulnerabilities' | 'none';

export interface Page {
  readonly title: string;
  readonly section: Section;
  readonly body: Html;
  /** Data for the page's charts, embedded as JSON (read by /ui/assets/app.js; no inline script, so CSP can forbid them). */
  readonly charts?: Readonly<Record<string, unknown>>;
  /** Whether the visitor signed in with a token (shows the sign-out link). */
  readonly signedIn?: boolean;
}

const NAV: ReadonlyArray<{ section: Section; href: string; label: string }> = [
  { section: 'images', href: '/ui', label: 'Images' },
  { section: 'changes', href: '/ui/changes', label: 'Changes' },
  { section: 'feeds', href: '/ui/feeds', label: 'Feeds' },
];

/** A whole document: landmarks, navigation, the vulnerability search, the page, its chart data. */
export function layout(page: Page): Html {
  const charts = page.charts && Object.keys(page.charts).length > 0 ? page.charts : undefined;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>${page.title} · Tarsier</title>
        <link rel="stylesheet" href="/ui/assets/app.css" />
        ${charts ? html`<link rel="stylesheet" href="/ui/assets/uplot.css" />` : ''}
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
          <a class="brand" href="/ui">Tarsier</a>
          <nav aria-label="Sections">
            <ul>
              ${NAV.map(
                (n) => html`<li><a href="${n.href}" ${n.section === page.section ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
              )}
            </ul>
          </nav>
          <form class="search" role="search" action="/ui/vulnerabilities" method="get">
            <label for="vulnerability-search">Vulnerability</label>
            <input id="vulnerability-search" name="name" placeholder="CVE-2024-6387" required maxlength="256" />
            <button type="submit">Find</button>
          </form>
          ${page.signedIn ? html`<form action="/ui/logout" method="post" class="signout"><button type="submit">Sign out</button></form>` : ''}
        </header>
        <main id="main" tabindex="-1">${page.body}</main>
        ${
          charts
            ? html`<script type="application/json" id="chart-data">
                  ${new Html(JSON.stringify(charts).replace(/</g, '\\u003c'))}
                </script>
                <script src="/ui/assets/uplot.js"></script>`
            : ''
        }
        <script src="/ui/assets/app.js"></script>
      </body>
    </html> `;
}
